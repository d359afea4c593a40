package testbed_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestRegistryServesPushedImages pushes an image to the stack's registry with
// go-containerregistry, and reads back the digest the registry serves for it.
func TestRegistryServesPushedImages(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer, func(o *testbed.Options) { o.Registry = true })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref, err := name.ParseReference(s.Registry+"/csi-olm/probe:v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		t.Fatalf("pushing to %s: %v", ref, err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("asking %s for the digest: %v", ref, err)
	}
	if desc.Digest != want {
		t.Errorf("the registry serves %s as %s, pushed %s", ref, desc.Digest, want)
	}
	// A tag nobody pushed is not there.
	missing, _ := name.ParseReference(s.Registry+"/csi-olm/probe:v2", name.Insecure)
	if _, err := remote.Head(missing, remote.WithContext(ctx)); err == nil {
		t.Errorf("the registry answered for %s, which was never pushed", missing)
	}
}
