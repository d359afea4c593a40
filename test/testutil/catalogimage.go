package testutil

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/csi-olm/csi-olm/images"
)

// PushCatalogImage pushes a catalog image of dir, laid out as `csi-olm release` builds them with
// cfg, to an in-memory registry on loopback that lives as long as the test, and returns its
// reference, tagged tag.
func PushCatalogImage(t *testing.T, dir string, cfg images.Config, tag string) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	files, err := images.CopyFS(os.DirFS(dir), ".", images.ConfigsDir, false)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := images.Layer(files)
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Image(nil, cfg, layer)
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/csi-olm/certified:" + tag
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	return ref
}
