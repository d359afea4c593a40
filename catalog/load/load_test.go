package load_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"

	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// A catalog image reads as the directory it was built from, and a registry serving the directory
// as the directory itself.
func TestOpenCatalogImageAndRegistry(t *testing.T) {
	ctx := context.Background()
	const dir = "../certified/v4.11"
	ref := testutil.PushCatalogImage(t, dir, images.CatalogConfig(v1.Platform{OS: "linux", Architecture: "amd64"}), "test")
	img, err := load.Open(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if img.Name != "certified" || img.Arg != ref {
		t.Errorf("opened as %q from %q, want certified from %s", img.Name, img.Arg, ref)
	}
	fromDir, err := declcfg.LoadFS(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	fromImage, err := declcfg.LoadFS(ctx, img.FS)
	if err != nil {
		t.Fatal(err)
	}
	if want, got := shape(t, fromDir), shape(t, fromImage); got != want {
		t.Errorf("the image reads as\n%s\nwant the directory's\n%s", got, want)
	}
	synthetic, err := synthcatalog.Config()
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*declcfg.DeclarativeConfig{fromDir, synthetic} {
		written := t.TempDir()
		if err := declcfg.WriteFS(*cfg, written, declcfg.WriteJSON, ".json"); err != nil {
			t.Fatal(err)
		}
		served, err := load.Serve(ctx, os.DirFS(written), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		fromRegistry, err := load.FromRegistry(ctx, served.Client)
		served.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want, got := shape(t, cfg), shape(t, fromRegistry); got != want {
			t.Errorf("the registry serves\n%s\nwant the catalog's\n%s", got, want)
		}
	}
}

// shape is what a catalog says of its packages, channels and bundles' names, versions and
// upgrade edges, the parts OLM resolves from.
func shape(t *testing.T, cfg *declcfg.DeclarativeConfig) string {
	t.Helper()
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range m {
		lines = append(lines, fmt.Sprintf("package %s default %s", p.Name, p.DefaultChannel.Name))
		for _, ch := range p.Channels {
			for _, b := range ch.Bundles {
				lines = append(lines, fmt.Sprintf("  %s/%s %s %s replaces=%q skips=%v skipRange=%q", p.Name, ch.Name, b.Name, b.Version, b.Replaces, b.Skips, b.SkipRange))
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	// An image without the configs label is no catalog image.
	unlabelled := testutil.PushCatalogImage(t, "../certified/v4.11", images.Config{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}}, "test")
	for arg, want := range map[string]string{
		unlabelled:                   "has no operators.operatorframework.io.index.configs.v1 label",
		"/nonexistent/catalog":       "catalog /nonexistent/catalog: no such directory, and not an image reference",
		"catalog/certifie":           "catalog catalog/certifie: no such directory, and not an image reference",
		"../nowhere/v4.11":           "catalog ../nowhere/v4.11: no such directory, and not an image reference",
		"./nowhere:v4.11":            "catalog ./nowhere:v4.11: no such directory, and not an image reference",
		"load_test.go":               "catalog load_test.go: not a directory",
		"../certified":               "catalog ../certified is a tree of per-minor catalogs (v4.5, v4.9, v4.10, v4.11): give the catalog of one minor, such as ../certified/v4.11",
		"127.0.0.1:1/csi-olm/none:x": "no such directory, and pulling it as an image failed",
	} {
		if _, err := load.Open(ctx, arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s): %v, want %q", arg, err, want)
		}
	}
}

// countingClient counts the bundle listings a registry streams.
type countingClient struct {
	registryclient.Interface
	lists int
}

func (c *countingClient) ListBundles(ctx context.Context) (*registryclient.BundleIterator, error) {
	c.lists++
	return c.Interface.ListBundles(ctx)
}

// A registry wrapped by ListedOnce streams its bundles once, and every reader gets all of them.
func TestListedOnce(t *testing.T) {
	ctx := context.Background()
	const dir = "../certified/v4.11"
	cfg, err := declcfg.LoadFS(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	served, err := load.Serve(ctx, os.DirFS(dir), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer served.Close()
	counting := &countingClient{Interface: served.Client}
	once := load.ListedOnce(counting)
	for range 2 {
		fromRegistry, err := load.FromRegistry(ctx, once)
		if err != nil {
			t.Fatal(err)
		}
		if want, got := shape(t, cfg), shape(t, fromRegistry); got != want {
			t.Errorf("read through ListedOnce:\n%s\nwant the catalog's\n%s", got, want)
		}
	}
	if counting.lists != 1 {
		t.Errorf("the registry streamed its bundles %d times, want once", counting.lists)
	}
}
