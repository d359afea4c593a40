package load_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
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

// pushTo pushes img to the in-memory registry srv under repo (mirror-relative) and returns the
// registry's host:port.
func pushTo(t *testing.T, srv *httptest.Server, repo string, img v1.Image) string {
	t.Helper()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, err := name.ParseReference(host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return host
}

// writeConf writes a registries.conf and returns its path.
func writeConf(t *testing.T, text string) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// A bundle image reads as the manifests directory it was built from, pulled from the mirror
// that registries.conf names for its registry, as podman and opm pull it.
func TestBundleManifestsThroughAMirror(t *testing.T) {
	const dir = "../../bundle/aws-efs-operator/4.11.0"
	img, err := images.Bundle(os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	mirror := pushTo(t, srv, "quay.io/csi-olm/aws-efs-operator-bundle:v4.11.0", img)
	// quay.io itself is located at the mirror too: a failing mirror must not send the test out.
	conf := writeConf(t, fmt.Sprintf("[[registry]]\nprefix = \"quay.io\"\nlocation = %q\ninsecure = true\n\n[[registry.mirror]]\nlocation = %q\ninsecure = true\n",
		mirror+"/quay.io", mirror+"/quay.io"))
	var progress strings.Builder
	ctx := load.WithRegistry(context.Background(), load.Registry{RegistriesConf: conf, Progress: &progress})
	files, err := load.BundleManifests(ctx, "quay.io/csi-olm/aws-efs-operator-bundle:v4.11.0")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(entries) {
		t.Errorf("the image holds %d manifests, the bundle %d: %v", len(files), len(entries), slices.Sorted(maps.Keys(files)))
	}
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := files[e.Name()]; !ok || string(got) != string(want) {
			t.Errorf("manifest %s reads as %d bytes (found %v), want the bundle's %d", e.Name(), len(got), ok, len(want))
		}
	}
	if want := "pulling bundle image " + mirror + "/quay.io/csi-olm/aws-efs-operator-bundle:v4.11.0\n"; progress.String() != want {
		t.Errorf("progress %q, want %q", progress.String(), want)
	}
}

// What cannot be read as a bundle is refused, naming the image and why.
func TestBundleManifestsRefuses(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	plain, err := images.Image(nil, images.Config{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	host := pushTo(t, srv, "csi-olm/plain:x", plain)
	conf := writeConf(t, "[[registry]]\nprefix = \"blocked.example\"\nlocation = \"blocked.example\"\nblocked = true\n\n"+
		"[[registry]]\nprefix = \"unreachable.example\"\nlocation = \"127.0.0.1:1/primary\"\ninsecure = true\n\n[[registry.mirror]]\nlocation = \"127.0.0.1:2/mirror\"\ninsecure = true\n")
	ctx := load.WithRegistry(context.Background(), load.Registry{RegistriesConf: conf})
	for _, tc := range []struct{ ref, want string }{
		{host + "/csi-olm/plain:x", "bundle image " + host + "/csi-olm/plain:x has no operators.operatorframework.io.bundle.manifests.v1 label: it is not a bundle image"},
		{"blocked.example/csi-olm/bundle:x", "blocks the registry of blocked.example/csi-olm/bundle:x"},
		{"unreachable.example/csi-olm/bundle:x", "bundle image unreachable.example/csi-olm/bundle:x: pulling it as an image failed from each of its sources (" + conf + "): 127.0.0.1:2/mirror/csi-olm/bundle:x: "},
		{"bundle:x", "bundle image bundle:x: not an image reference with a registry host (registry.example/bundle:tag)"},
	} {
		_, err := load.BundleManifests(ctx, tc.ref)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("BundleManifests(%s): %v, want %q", tc.ref, err, tc.want)
		}
		if tc.ref == "unreachable.example/csi-olm/bundle:x" && err != nil && !strings.Contains(err.Error(), "; 127.0.0.1:1/primary/csi-olm/bundle:x: ") {
			t.Errorf("BundleManifests(%s) does not name the primary location it tried after the mirror: %v", tc.ref, err)
		}
	}
}
