package release_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distribution/reference"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/sirupsen/logrus"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/lint"
	"github.com/csi-olm/csi-olm/catalog/render"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/images/registry"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/release"
	"github.com/csi-olm/csi-olm/test/testutil"
)

const (
	operatorPkg = "github.com/csi-olm/csi-olm/cmd/aws-efs-csi-driver-operator"
	// standInPkg is the arm64 operator binary's stand-in (newBed).
	standInPkg = "github.com/csi-olm/csi-olm/test/e2e/netprobe"
	// cliPkg is csi-olm, which a release carries and builds its image from.
	cliPkg = "github.com/csi-olm/csi-olm/cmd/csi-olm"
)

// upstreams are the registries the definitions reference; a test serves each of them from the
// loopback registry, under <registry>/<upstream>/.
var upstreams = []string{"quay.io", "registry.k8s.io", "docker.io"}

func mirrors(addr string) []registry.Mirror {
	var ms []registry.Mirror
	for _, u := range upstreams {
		ms = append(ms, registry.Mirror{Source: u, Mirror: addr + "/" + u})
	}
	return ms
}

// fastRetries keeps the error cases from waiting through go-containerregistry's default backoff.
var fastRetries = []remote.Option{remote.WithRetryBackoff(remote.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 2})}

// standIn is a small image that stands in for a third-party image: a real manifest list the
// registry serves, holding one image per platform whose only file names what it stands for.
func standIn(t testing.TB, ref string, platforms []v1.Platform) v1.ImageIndex {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: testutil.StandInImage(t, ref, p), Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx
}

// pushStandIns pushes a stand-in for every image the definitions reference but skip: the images
// of other projects and of earlier releases.
func pushStandIns(t testing.TB, c *registry.Client, operators []definition.Operator, skip ...string) {
	t.Helper()
	ctx := context.Background()
	platforms := map[string][]v1.Platform{}
	for _, w := range release.Wants(operators) {
		for _, p := range w.Platforms {
			if !slices.ContainsFunc(platforms[w.Ref], p.Equals) {
				platforms[w.Ref] = append(platforms[w.Ref], p)
			}
		}
	}
	for ref, ps := range platforms {
		if slices.Contains(skip, ref) {
			continue
		}
		if _, err := c.Push(ctx, ref, standIn(t, ref, ps)); err != nil {
			t.Fatal(err)
		}
	}
}

// bed is a registry with stand-ins and what a release needs.
type bed struct {
	addr     string
	client   *registry.Client
	binaries []string
	// cli are csi-olm's binaries, the first for the csi-olm image.
	cli       []string
	opm       string
	probe     string
	operators []definition.Operator
}

func init() {
	// operator-registry's bundle parser logs every optional file it does not find.
	logrus.SetLevel(logrus.WarnLevel)
}

func newBed(t *testing.T) *bed {
	t.Helper()
	b := &bed{addr: testutil.StartRegistry(t), opm: testutil.Opm(t), probe: testutil.GRPCHealthProbe(t), operators: drivers.All()}
	b.client = &registry.Client{Mirrors: mirrors(b.addr)}
	head, err := release.HeadOperatorImage(b.operators)
	if err != nil {
		t.Fatal(err)
	}
	// The release builds the newest operator image; it stands in for every other.
	pushStandIns(t, b.client, b.operators, head)
	// The operator as its amd64 image carries it, and for arm64 a small static program: a release
	// reads only the platform of the binaries it packs, and cross-compiling the operator took a
	// fifth of a cold `make test`'s compiling. The end-to-end tier's release packs both real
	// builds (test/e2e's publish).
	b.binaries = []string{testutil.BuildStatic(t, operatorPkg, "amd64"), testutil.BuildStatic(t, standInPkg, "arm64")}
	// csi-olm as its image carries it, and for macOS a small program built for it: a release reads
	// only the platform of the binaries it carries.
	darwin := filepath.Join(t.TempDir(), "csi-olm-darwin")
	build := exec.Command("go", "build", "-trimpath", "-o", darwin, "./testdata/hello")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=darwin", "GOARCH=arm64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a macOS stand-in: %v\n%s", err, out)
	}
	b.cli = []string{testutil.BuildStatic(t, cliPkg, "amd64"), darwin}
	return b
}

func (b *bed) release(output string, out io.Writer) *release.Release {
	return &release.Release{
		Operators: b.operators, Registry: b.addr + "/csi-olm",
		OperatorBinaries: b.binaries, CLIBinaries: b.cli, Version: "4.11.0", Revision: "test",
		OPM: b.opm, GRPCHealthProbe: b.probe, Client: b.client, OutputDir: output, Out: out,
	}
}

// TestRelease runs whole releases against the loopback registry: one that succeeds, checked with
// the real opm and the registry itself, then one per kind of bad input. They share the registry
// and the operator binaries.
func TestRelease(t *testing.T) {
	b := newBed(t)
	t.Run("pins every image to what the registry serves", func(t *testing.T) { testPins(t, b) })
	t.Run("bad input fails naming the image and writes nothing", func(t *testing.T) { testBadInput(t, b) })
	t.Run("images of the tree go to an OCI layout", func(t *testing.T) { testImages(t, b) })
}

// testImages builds the tree's images into an OCI layout twice and checks that it names every
// image and that the two layouts are the same.
func testImages(t *testing.T, b *bed) {
	ctx := context.Background()
	layouts := make([]string, 2)
	var report bytes.Buffer
	for i := range layouts {
		layouts[i] = filepath.Join(t.TempDir(), "images")
		a := &release.Images{OperatorBinaries: b.binaries, Version: "dev", Revision: "test", OPM: b.opm, GRPCHealthProbe: b.probe,
			Bundles: "../bundle", Catalogs: "../catalog", OCILayout: layouts[i], Client: b.client, Out: io.Discard}
		if i == 0 {
			a.Output, a.Out = "yaml", &report
		}
		if err := a.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p, err := layout.FromPath(layouts[0])
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range manifest.Manifests {
		names = append(names, m.Annotations["org.opencontainers.image.ref.name"])
	}
	bundles, _ := filepath.Glob("../bundle/*/*/metadata")
	want := []string{"localhost/csi-olm/aws-efs-csi-driver-operator:dev"}
	for catalog, minors := range definition.CatalogMinors(b.operators) {
		for _, m := range minors {
			want = append(want, release.CatalogImage("localhost/csi-olm", string(catalog), m.Index()))
		}
	}
	for _, m := range bundles {
		dir := filepath.Dir(m)
		want = append(want, release.BundleImage("localhost/csi-olm", filepath.Base(filepath.Dir(dir)), filepath.Base(dir)))
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("the layout names\n%q\nwant\n%q", names, want)
	}
	var reported release.ImagesReport
	if err := yaml.Unmarshal(report.Bytes(), &reported); err != nil || reported.OCILayout != layouts[0] || !slices.Equal(slices.Sorted(slices.Values(reported.Images)), want) {
		t.Errorf("-o yaml: %v, %+v, want the layout's images\n%s", err, reported, report.String())
	}
	first, second := testutil.Snapshot(t, layouts[0]), testutil.Snapshot(t, layouts[1])
	if len(first) != len(second) || first["index.json"] != second["index.json"] {
		t.Errorf("two builds of the same tree differ:\n%s\n%s", first["index.json"], second["index.json"])
	}
	for _, bad := range []release.Images{{OCILayout: "x", Registry: "y"}, {}} {
		if err := bad.Run(ctx); err == nil || !strings.Contains(err.Error(), "either a registry") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func testPins(t *testing.T, b *bed) {
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "release")
	var log bytes.Buffer
	r := b.release(out, &log)
	r.Output = "json"
	if err := r.Run(ctx); err != nil {
		t.Fatalf("release: %v\n%s", err, log.String())
	}

	t.Run("the report names every image pushed", func(t *testing.T) {
		var report release.Report
		if err := json.Unmarshal(log.Bytes(), &report); err != nil {
			t.Fatalf("-o json is no report: %v\n%s", err, log.String())
		}
		catalogs, err := os.ReadFile(filepath.Join(out, release.CatalogsFile))
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, c := range report.CatalogImages {
			lines = append(lines, c.Catalog+" "+c.Minor+" "+c.Image)
		}
		if got := strings.Join(lines, "\n") + "\n"; got != string(catalogs) {
			t.Errorf("the report's catalog images:\n%s\nwant %s's:\n%s", got, release.CatalogsFile, catalogs)
		}
		bundles := 0
		for _, o := range b.operators {
			bundles += len(o.Releases)
		}
		if report.OutputDir != out || !strings.Contains(report.OperatorImage, "@sha256:") || len(report.BundleImages) != bundles {
			t.Errorf("report %+v: want %s, the operator image by digest and %d bundle images", report, out, bundles)
		}
	})

	t.Run("csi-olm is published as binaries with checksums and as an image with opm", func(t *testing.T) { testCLI(t, b, out) })

	t.Run("bundles pass the release check", func(t *testing.T) {
		v := lint.Validate{Paths: []string{filepath.Join(out, "bundle")}, Strict: true, Release: true,
			Explain: lint.ExplainerFor(b.operators), Out: io.Discard}
		if err := v.Run(ctx); err != nil {
			t.Error(err)
		}
	})

	t.Run("every image is pinned to the registry's digest", func(t *testing.T) {
		for _, o := range b.operators {
			for _, rel := range o.Releases {
				bundle, err := manifests.GetBundleFromDir(filepath.Join(out, "bundle", o.Package, rel.Version))
				if err != nil {
					t.Fatal(err)
				}
				var related []string
				for _, ri := range bundle.CSV.Spec.RelatedImages {
					related = append(related, ri.Image)
				}
				for _, ref := range append([]string{rel.OperatorImage}, imageRefs(rel)...) {
					want := servedDigest(t, b.client, ref)
					if !slices.ContainsFunc(related, func(p string) bool { return strings.HasSuffix(p, "@"+want) && strings.HasPrefix(p, repo(t, ref)+"@") }) {
						t.Errorf("%s: %s is served as %s, but the bundle relates %v", o.CSVName(rel.Version), ref, want, related)
					}
				}
			}
		}
	})

	// The published catalogs: a tree per catalog, one catalog per OpenShift minor.
	type minorCatalog struct {
		dir string
		cfg *declcfg.DeclarativeConfig
	}
	var catalogs []minorCatalog
	for _, c := range []definition.Catalog{definition.Community, definition.Certified} {
		tr, err := tree.Open(filepath.Join(out, "catalog", string(c)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tr.Minors {
			cfg, err := declcfg.LoadFS(ctx, os.DirFS(tr.Path(m)))
			if err != nil {
				t.Fatal(err)
			}
			catalogs = append(catalogs, minorCatalog{tr.Path(m), cfg})
		}
	}

	t.Run("catalogs reference the pushed bundle images by digest", func(t *testing.T) {
		for _, c := range catalogs {
			for _, bundle := range c.cfg.Bundles {
				o := operatorOf(t, b.operators, bundle.Name)
				ref := r.BundleImage(o, strings.TrimPrefix(bundle.Name, o.CSVPrefix+".v"))
				want := repo(t, ref) + "@" + servedDigest(t, b.client, ref)
				if bundle.Image != want {
					t.Errorf("%s: bundle %s has image %q, the registry serves %q", c.dir, bundle.Name, bundle.Image, want)
				}
			}
		}
	})

	t.Run("csi-olm and opm validate the published catalogs", func(t *testing.T) {
		var report bytes.Buffer
		v := validation.Validate{Dir: filepath.Join(out, "catalog", "certified"), Community: filepath.Join(out, "catalog", "community"), Out: &report}
		if err := v.Run(ctx); err != nil || strings.Contains(strings.ReplaceAll(report.String(), "0 errors, 0 warnings", ""), "warning") {
			t.Errorf("csi-olm catalog validate: %v\n%s", err, report.String())
		}
		for _, c := range catalogs {
			if out, err := exec.Command(b.opm, "validate", c.dir).CombinedOutput(); err != nil {
				t.Errorf("opm validate %s: %v\n%s", c.dir, err, out)
			}
		}
	})

	t.Run("opm renders each bundle image as csi-olm renders its directory", func(t *testing.T) {
		// A bundle is in the catalog of every minor it is for: each image is rendered once.
		rendered := map[string]bool{}
		for _, c := range catalogs {
			for _, bundle := range c.cfg.Bundles {
				if rendered[bundle.Image] {
					continue
				}
				rendered[bundle.Image] = true
				o := operatorOf(t, b.operators, bundle.Name)
				dir := filepath.Join(out, "bundle", o.Package, strings.TrimPrefix(bundle.Name, o.CSVPrefix+".v"))
				opmJSON, err := exec.Command(b.opm, "render", bundle.Image, "--use-http", "-o", "json").Output()
				if err != nil {
					t.Fatalf("opm render %s: %v", bundle.Image, stderr(err))
				}
				mine, err := render.RenderBundle(dir, bundle.Image)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := canonical(t, opmJSON), canonical(t, mustJSON(t, mine)); got != want {
					t.Errorf("%s: opm renders the image as\n%s\ncsi-olm renders the directory as\n%s", bundle.Image, got, want)
				}
			}
		}
		if len(rendered) == 0 {
			t.Fatal("the published catalogs name no bundle image")
		}
	})

	t.Run("opm serves each catalog image as the definitions say", func(t *testing.T) {
		lines, err := os.ReadFile(filepath.Join(out, release.CatalogsFile))
		if err != nil {
			t.Fatal(err)
		}
		// One image per catalog and minor, "<catalog> <minor> <image@digest>", tagged with the minor.
		want := 0
		for _, minors := range definition.CatalogMinors(b.operators) {
			want += len(minors)
		}
		got := strings.Split(strings.TrimSpace(string(lines)), "\n")
		if len(got) != want {
			t.Errorf("%s has %d lines, want one per catalog and minor (%d):\n%s", release.CatalogsFile, len(got), want, lines)
		}
		for _, line := range got {
			fields := strings.Fields(line)
			if len(fields) != 3 {
				t.Fatalf("%s: line %q is not '<catalog> <minor> <image@digest>'", release.CatalogsFile, line)
			}
			catalog, index, ref := fields[0], fields[1], fields[2]
			m, err := openshift.ParseMinor(index)
			if err != nil {
				t.Fatal(err)
			}
			tagged := release.CatalogImage(b.addr+"/csi-olm", catalog, m.Index())
			if pinned, err := b.client.Pin(ctx, tagged); err != nil || pinned != ref {
				t.Errorf("%s is %s (%v), want the image catalogs.txt names, %s", tagged, pinned, err, ref)
			}
			root := extract(t, b.client, ref)
			client := testutil.ServeCatalog(t, filepath.Join(root, images.OPMBinary), filepath.Join(root, images.ConfigsDir))
			testutil.CheckServedCatalog(t, client, definition.Catalog(catalog), m, b.operators)
		}
	})

	t.Run("a second release pushes the same digests", func(t *testing.T) {
		again := filepath.Join(t.TempDir(), "release")
		if err := b.release(again, io.Discard).Run(ctx); err != nil {
			t.Fatal(err)
		}
		first, second := testutil.Snapshot(t, out), testutil.Snapshot(t, again)
		for file, content := range first {
			if second[file] != content {
				t.Errorf("%s differs between two releases of the same source", file)
			}
		}
		if len(first) != len(second) {
			t.Errorf("the releases have %d and %d files", len(first), len(second))
		}
	})
}

func imageRefs(r definition.Release) []string {
	var refs []string
	for _, img := range r.Images {
		refs = append(refs, img.Ref)
	}
	return refs
}

// repo is a reference without its tag or digest.
func repo(t *testing.T, ref string) string {
	t.Helper()
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		t.Fatal(err)
	}
	return named.Name()
}

func servedDigest(t *testing.T, c *registry.Client, ref string) string {
	t.Helper()
	loc, err := c.Location(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(loc)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	return desc.Digest.String()
}

func operatorOf(t *testing.T, operators []definition.Operator, csv string) *definition.Operator {
	t.Helper()
	for i := range operators {
		if strings.HasPrefix(csv, operators[i].CSVPrefix+".v") {
			return &operators[i]
		}
	}
	t.Fatalf("no operator makes %s", csv)
	return nil
}

// extract pulls an image and unpacks its file system into a temporary directory.
func extract(t *testing.T, c *registry.Client, ref string) string {
	t.Helper()
	loc, err := c.Location(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(loc)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	tar := exec.Command("tar", "-x", "-C", root)
	tar.Stdin = mutate.Extract(img)
	if out, err := tar.CombinedOutput(); err != nil {
		t.Fatalf("unpack %s: %v\n%s", ref, err, out)
	}
	return root
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// canonical re-encodes one JSON object with sorted keys, so that two encoders compare equal.
func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v:\n%s", err, raw)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func stderr(err error) string {
	if exit, ok := err.(*exec.ExitError); ok {
		return fmt.Sprintf("%v: %s", err, exit.Stderr)
	}
	return err.Error()
}

// faultyProxy serves the registry at addr through a proxy that lets fault answer a request
// first: it returns true when it answered.
func faultyProxy(t *testing.T, addr string, fault func(w http.ResponseWriter, r *http.Request) bool) string {
	t.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fault(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// tamper rewrites the manifest bodies the registry answers for the repositories matched by path.
type tamper struct {
	http.ResponseWriter
}

func (w tamper) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(append(bytes.TrimRight(p, "\n"), ' ')); err != nil {
		return 0, err
	}
	return len(p), nil
}

func testBadInput(t *testing.T, b *bed) {
	ctx := context.Background()
	closed := func() string {
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := strings.TrimPrefix(srv.URL, "http://")
		srv.Close()
		return addr
	}()
	efsHead := func(ops []definition.Operator) *definition.Release {
		for i := range ops {
			if ops[i].CSVPrefix == "aws-efs-csi-driver-operator" {
				return &ops[i].Releases[len(ops[i].Releases)-1]
			}
		}
		t.Fatal("no EFS operator")
		return nil
	}
	amd64Only := "quay.io/brancz/kube-rbac-proxy:v0.20.0-amd64-only"
	if _, err := b.client.Push(ctx, amd64Only, standIn(t, amd64Only, []v1.Platform{{OS: "linux", Architecture: "amd64"}})); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// change alters the release (a copy of the operators, a client of its own).
		change func(r *release.Release)
		want   []string
	}{
		{
			name: "unreachable registry",
			change: func(r *release.Release) {
				r.Client.Mirrors = []registry.Mirror{{Source: "quay.io", Mirror: closed + "/quay.io"}}
			},
			want: []string{"image quay.io/csi-olm/aws-efs-csi-driver-operator:v4.11.0 (from " + closed + "/quay.io/csi-olm/aws-efs-csi-driver-operator:v4.11.0)", "connection refused"},
		},
		{
			name: "missing tag",
			change: func(r *release.Release) {
				efsHead(r.Operators).Images[1].Ref = "registry.k8s.io/sig-storage/csi-provisioner:v9.9.9"
			},
			want: []string{"1 of 35 images cannot be pinned", "image registry.k8s.io/sig-storage/csi-provisioner:v9.9.9 (from " + b.addr + "/registry.k8s.io/sig-storage/csi-provisioner:v9.9.9)", "MANIFEST_UNKNOWN"},
		},
		{
			name: "manifest list without a platform the operator declares",
			change: func(r *release.Release) {
				efsHead(r.Operators).Images[4].Ref = amd64Only
			},
			want: []string{"image " + amd64Only + ": the manifest list has images for linux/amd64, not for linux/arm64"},
		},
		{
			name: "registry answering 500 in the middle of a push",
			change: func(r *release.Release) {
				// A repository prefix of its own, so that the registry does not hold the blobs yet.
				r.Registry = faultyProxy(t, b.addr, func(w http.ResponseWriter, r *http.Request) bool {
					if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/aws-ebs-csi-driver-operator-bundle/blobs/uploads/") {
						http.Error(w, "disk full", http.StatusInternalServerError)
						return true
					}
					return false
				}) + "/fresh"
			},
			want: []string{"push image ", "/fresh/aws-ebs-csi-driver-operator-bundle:v4.5.0", "500 Internal Server Error"},
		},
		{
			name: "digest mismatch when the pushed manifest is pulled back",
			change: func(r *release.Release) {
				r.Registry = faultyProxy(t, b.addr, func(w http.ResponseWriter, r *http.Request) bool {
					if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/certified-catalog/manifests/sha256:") {
						proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: b.addr})
						proxy.ModifyResponse = func(resp *http.Response) error {
							resp.Header.Del("Content-Length")
							return nil
						}
						proxy.ServeHTTP(tamper{w}, r)
						return true
					}
					return false
				}) + "/csi-olm"
			},
			want: []string{"/csi-olm/certified-catalog:v4.5: pull back sha256:", "does not match requested digest"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "release")
			r := b.release(out, io.Discard)
			// The operator image the first release pushed is pinned like any other: building it
			// again would only cost time (compressing two binaries), and no case needs it.
			r.OperatorBinaries = nil
			r.Operators = drivers.All()
			client := *b.client
			client.Mirrors = slices.Clone(client.Mirrors)
			client.Options = fastRetries
			r.Client = &client
			tt.change(r)
			err := r.Run(ctx)
			if err == nil {
				t.Fatal("the release succeeded")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error lacks %q:\n%v", want, err)
				}
			}
			if entries, _ := os.ReadDir(parent); len(entries) > 0 {
				t.Errorf("a failed release left %v in %s", entries, parent)
			}
		})
	}
}

// testCLI checks the release's csi-olm: each binary under cli/ with its checksum in SHA256SUMS,
// and the image tools.txt pins, which runs csi-olm with opm beside it.
func testCLI(t *testing.T, b *bed, out string) {
	sums, err := os.ReadFile(filepath.Join(out, release.CLIDir, release.ChecksumsFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		binary, err := os.ReadFile(filepath.Join(out, release.CLIDir, name))
		if !ok || err != nil || fmt.Sprintf("%x", sha256.Sum256(binary)) != sum {
			t.Errorf("%s line %q does not match the file: %v", release.ChecksumsFile, line, err)
		}
		names = append(names, name)
	}
	if want := []string{"csi-olm-darwin-arm64", "csi-olm-linux-amd64"}; !slices.Equal(names, want) {
		t.Errorf("cli/ holds %v, want %v", names, want)
	}
	tools, err := os.ReadFile(filepath.Join(out, release.ToolsFile))
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(tools)), "csi-olm ")
	if !ok || !strings.HasPrefix(ref, b.addr+"/csi-olm/csi-olm@sha256:") {
		t.Fatalf("%s: %q, want csi-olm and its image by digest", release.ToolsFile, tools)
	}
	loc, err := b.client.Location(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(loc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{images.CLIBinary}) || cfg.Config.User != images.NonRootUser || cfg.Architecture != "amd64" ||
		!slices.Equal(cfg.Config.Env, []string{images.CLIPath}) {
		t.Errorf("image config %+v, want csi-olm run as a non-root user on amd64, with a PATH to it", cfg.Config)
	}
	files, links := map[string][]byte{}, map[string]string{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Typeflag == tar.TypeSymlink {
			links["/"+strings.TrimPrefix(h.Name, "/")] = h.Linkname
		}
		if data, err := io.ReadAll(tr); err == nil {
			files["/"+strings.TrimPrefix(h.Name, "/")] = data
		}
	}
	// A script's steps run in the image: its shell is csi-olm (internal/shell).
	if links[images.CLIShell] != images.CLIBinary {
		t.Errorf("%s links to %q, want %s", images.CLIShell, links[images.CLIShell], images.CLIBinary)
	}
	wantCLI, err := os.ReadFile(b.cli[0])
	if err != nil {
		t.Fatal(err)
	}
	wantOPM, err := os.ReadFile(b.opm)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files[images.CLIBinary], wantCLI) || !bytes.Equal(files[images.OPMBinary], wantOPM) {
		t.Errorf("the image does not carry the released csi-olm and opm: %d and %d bytes", len(files[images.CLIBinary]), len(files[images.OPMBinary]))
	}
}
