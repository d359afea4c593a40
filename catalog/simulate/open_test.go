package simulate_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/images/build"
)

// pushCatalog pushes a catalog image of dir, laid out as csi-olm release builds them, to an
// in-memory registry on loopback, and returns its reference.
func pushCatalog(t *testing.T, dir string, cfg build.Config) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	files, err := build.CopyFS(os.DirFS(dir), ".", build.ConfigsDir, false)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := build.Layer(files)
	if err != nil {
		t.Fatal(err)
	}
	img, err := build.Image(nil, cfg, layer)
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/csi-olm/certified:test"
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	return ref
}

func TestOpenCatalogImage(t *testing.T) {
	ctx := context.Background()
	ref := pushCatalog(t, "../certified/v4.11", build.CatalogConfig(v1.Platform{OS: "linux", Architecture: "amd64"}))
	img, err := simulate.Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if img.Name != "certified" || img.Dir != ref {
		t.Errorf("opened as %q from %q, want certified from %s", img.Name, img.Dir, ref)
	}
	community, err := simulate.Open(ctx, "../community/v4.11")
	if err != nil {
		t.Fatal(err)
	}
	s := newSimulator(t, img.Catalog, community.Catalog)
	p, err := s.Simulate(ctx, "certified", simulate.Start{CSV: "aws-efs-operator.v0.0.6", InstalledFrom: "community-v4.11"})
	if err != nil {
		t.Fatal(err)
	}
	if got := route(p); got != "0.0.6 -skipRange-> 4.11.0" {
		t.Errorf("route from the image %q, want the directory's", got)
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	// An image without the configs label is no catalog image.
	unlabelled := pushCatalog(t, "../certified/v4.11", build.Config{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}})
	for arg, want := range map[string]string{
		unlabelled:                   "has no operators.operatorframework.io.index.configs.v1 label",
		"/nonexistent/catalog":       "catalog /nonexistent/catalog: no such directory, and not an image reference",
		"catalog/certifie":           "catalog catalog/certifie: no such directory, and not an image reference",
		"simulate_test.go":           "catalog simulate_test.go: not a directory",
		"../certified":               "catalog ../certified is a tree of per-minor catalogs (v4.5, v4.9, v4.10, v4.11): give the catalog of one minor, such as ../certified/v4.11",
		"127.0.0.1:1/csi-olm/none:x": "no such directory, and pulling it as an image failed",
	} {
		if _, err := simulate.Open(ctx, arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s): %v, want %q", arg, err, want)
		}
	}
}
