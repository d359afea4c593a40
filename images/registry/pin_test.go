package registry_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/csi-olm/csi-olm/images/registry"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// TestPinAllAgainstARealRegistry pushes images through a mirror to the test bed's registry and
// pins them, concurrently, with every failure reported at once.
func TestPinAllAgainstARealRegistry(t *testing.T) {
	addr := testutil.StartRegistry(t)
	var progress bytes.Buffer
	c := &registry.Client{Mirrors: []registry.Mirror{{Source: "quay.io", Mirror: addr + "/quay.io"}}, Progress: &progress}
	ctx := context.Background()
	amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := v1.Platform{OS: "linux", Architecture: "arm64"}
	pushed := map[string]string{}
	for _, ref := range []string{"quay.io/a/one:v1", "quay.io/a/two:v1", "quay.io/b/three:v2"} {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		img, err = mutate.ConfigFile(img, mustConfig(t, img, amd64))
		if err != nil {
			t.Fatal(err)
		}
		if pushed[ref], err = c.Push(ctx, ref, img); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(pushed[ref], strings.Split(ref, ":")[0]+"@sha256:") {
			t.Errorf("Push(%s) = %s, want the source repository pinned", ref, pushed[ref])
		}
	}
	var wants []registry.Want
	for ref := range pushed {
		wants = append(wants, registry.Want{Ref: ref, Platforms: []v1.Platform{amd64}})
	}
	// Wanted twice: once with no platform, once with one; both apply.
	wants = append(wants, registry.Want{Ref: "quay.io/a/one:v1"})
	got, err := c.PinAll(ctx, wants)
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range pushed {
		if got[ref] != want {
			t.Errorf("PinAll(%s) = %s, pushed %s", ref, got[ref], want)
		}
	}
	// Whoever watches hears of each push and pin.
	for _, want := range []string{"pushing quay.io/a/one:v1 (from " + addr + "/quay.io/a/one:v1)", "pinning 3 images by digest", "(3 of 3)"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}

	_, err = c.PinAll(ctx, []registry.Want{
		{Ref: "quay.io/a/one:v1", Platforms: []v1.Platform{amd64, arm64}},
		{Ref: "quay.io/a/missing:v1"},
		{Ref: "quay.io/a/two:v1"},
	})
	for _, want := range []string{
		"2 of 3 images cannot be pinned",
		"image quay.io/a/missing:v1 (from " + addr + "/quay.io/a/missing:v1)",
		"image quay.io/a/one:v1: the image is built for linux/amd64, not for linux/arm64",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PinAll error lacks %q: %v", want, err)
		}
	}
}

func mustConfig(t *testing.T, img v1.Image, p v1.Platform) *v1.ConfigFile {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = p.OS, p.Architecture
	return cfg
}
