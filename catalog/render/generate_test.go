package render_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/sirupsen/logrus"
	"golang.org/x/mod/modfile"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/registryv1"
	"github.com/csi-olm/csi-olm/catalog/render"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/test/testutil"
)

const bundleDir = "../../bundle"

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return stdout.Bytes()
}

func generateTo(t *testing.T, out, bundleImage string, ops []definition.Operator) error {
	t.Helper()
	g := &render.Generate{BundleDir: bundleDir, OutputDir: out, BundleImage: bundleImage, Operators: ops, Out: &bytes.Buffer{}}
	return g.Run(context.Background())
}

// The committed catalogs are this package's golden output.
var update = flag.Bool("update", false, "rewrite the committed catalogs (as `make catalog` does)")

func TestGenerateMatchesCommittedCatalogs(t *testing.T) {
	out := t.TempDir()
	// The single catalog's Dockerfile of earlier releases goes.
	if err := os.WriteFile(filepath.Join(out, "certified.Dockerfile"), []byte("FROM old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := generateTo(t, out, "", drivers.All()); err != nil {
		t.Fatal(err)
	}
	got := testutil.Snapshot(t, out)
	// Each catalog is a tree of per-minor catalogs with their Dockerfiles, and nothing else.
	trees := map[string]map[string]string{}
	for name, content := range got {
		top, rest, ok := strings.Cut(filepath.ToSlash(name), "/")
		if !ok {
			t.Errorf("%s was written outside the catalog trees", name)
			continue
		}
		if trees[top] == nil {
			trees[top] = map[string]string{}
		}
		trees[top][rest] = content
	}
	const how = "run `make catalog` or `go test ./catalog/render -update`"
	for top, files := range trees {
		testutil.CheckGoldenTree(t, filepath.Join("..", top), files, *update, how)
	}
	for _, want := range []string{"community/v4.5/aws-efs-operator/catalog.json", "community/v4.11/aws-efs-operator/catalog.json",
		"certified/v4.9/aws-efs-operator/catalog.json", "certified/v4.11/aws-efs-operator/catalog.json",
		"certified/v4.5/aws-ebs-csi-driver-operator/catalog.json", "certified/v4.5/manila-csi-driver-operator/catalog.json",
		"community/v4.5.Dockerfile", "certified/v4.11.Dockerfile"} {
		if _, ok := got[want]; !ok {
			t.Errorf("%s was not written", want)
		}
	}
	if df := got["certified/v4.11.Dockerfile"]; !strings.Contains(df, "ADD v4.11 /configs") {
		t.Errorf("the v4.11 Dockerfile does not build the v4.11 catalog:\n%s", df)
	}
}

// TestCatalogsFollowTheDefinitions reads the generated catalogs back, minor by minor, and checks
// every package, default channel, channel entry and edge against the definitions: each minor's
// catalog holds exactly the releases whose com.redhat.openshift.versions selects it, and no
// minor is missing or extra.
func TestCatalogsFollowTheDefinitions(t *testing.T) {
	ops := drivers.All()
	minors := definition.CatalogMinors(ops)
	for _, catalog := range []definition.Catalog{definition.Community, definition.Certified} {
		tr, err := tree.Open(filepath.Join("..", string(catalog)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tr.Minors, minors[catalog]) {
			t.Errorf("%s holds the minors %v, the definitions %v", catalog, tr.Minors, minors[catalog])
		}
		for _, m := range tr.Minors {
			cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(tr.Path(m)))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range ops {
				if o.Catalog == catalog {
					checkMinorCatalog(t, fmt.Sprintf("%s %s", catalog, m.Index()), cfg, &o, o.ReleasesIn(m))
				}
			}
		}
	}
}

func checkMinorCatalog(t *testing.T, where string, cfg *declcfg.DeclarativeConfig, o *definition.Operator, releases []definition.Release) {
	t.Helper()
	var pkg *declcfg.Package
	for i := range cfg.Packages {
		if cfg.Packages[i].Name == o.Package {
			pkg = &cfg.Packages[i]
		}
	}
	if len(releases) == 0 {
		if pkg != nil {
			t.Errorf("%s: package %s is there, but none of its releases is for this minor", where, o.Package)
		}
		return
	}
	if pkg == nil || pkg.DefaultChannel != o.DefaultChannel {
		t.Fatalf("%s: package %s missing or with another default channel: %+v", where, o.Package, pkg)
	}
	entries := map[string]declcfg.ChannelEntry{}
	for _, ch := range cfg.Channels {
		for _, e := range ch.Entries {
			if ch.Package == o.Package {
				entries[ch.Name+"/"+e.Name] = e
			}
		}
	}
	maxes := map[string]string{}
	for _, b := range cfg.Bundles {
		for _, p := range b.Properties {
			if p.Type == registryv1.MaxOpenShiftVersionProperty {
				maxes[b.Name] = strings.Trim(string(p.Value), `"`)
			}
		}
	}
	want := 0
	for _, r := range releases {
		name := o.CSVName(r.Version)
		if maxes[name] != r.MaxOpenShiftVersion() {
			t.Errorf("%s: %s has %s %q, want %q", where, name, registryv1.MaxOpenShiftVersionProperty, maxes[name], r.MaxOpenShiftVersion())
		}
		for _, ch := range r.Channels {
			want++
			e, ok := entries[ch+"/"+name]
			if !ok {
				t.Errorf("%s: %s is not in channel %s", where, name, ch)
				continue
			}
			if e.Replaces != r.Replaces || e.SkipRange != r.SkipRange || strings.Join(e.Skips, ",") != strings.Join(r.Skips, ",") {
				t.Errorf("%s: entry %+v does not carry the definition's edges (replaces %q, skips %v, skipRange %q)", where, e, r.Replaces, r.Skips, r.SkipRange)
			}
		}
	}
	if len(entries) != want {
		t.Errorf("%s: package %s has %d channel entries, the minor's releases %d: %v", where, o.Package, len(entries), want, slices.Sorted(maps.Keys(entries)))
	}
	if o.Deprecation != "" && (len(cfg.Deprecations) != 1 || cfg.Deprecations[0].Entries[0].Message != o.Deprecation) {
		t.Errorf("%s: deprecation of %s missing: %+v", where, o.Package, cfg.Deprecations)
	}
}

// TestRenderMatchesOpm renders every bundle directory in process and with the real opm, and
// expects the same olm.bundle.
func TestRenderMatchesOpm(t *testing.T) {
	opm := testutil.Opm(t)
	for _, o := range drivers.All() {
		for _, r := range o.Releases {
			dir := filepath.Join(bundleDir, o.Package, r.Version)
			want, err := declcfg.LoadReader(bytes.NewReader(run(t, opm, "render", dir, "-o", "json")))
			if err != nil {
				t.Fatal(err)
			}
			got, err := render.RenderBundle(dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if a, b := bundleJSON(t, want.Bundles[0]), bundleJSON(t, *got); a != b {
				t.Errorf("%s: rendering differs from opm's:\nopm: %.400s\nour: %.400s", dir, a, b)
			}
		}
	}
}

func bundleJSON(t *testing.T, b declcfg.Bundle) string {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestDockerfileMatchesOpm(t *testing.T) {
	opm := testutil.Opm(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "v4.11"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, opm, "generate", "dockerfile", filepath.Join(root, "v4.11"), "-i", render.OpmImage, "-b", render.OpmImage)
	want, err := os.ReadFile(filepath.Join(root, "v4.11.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if got := render.Dockerfile("v4.11", render.OpmImage, render.OpmImage); !bytes.Equal(got, want) {
		t.Errorf("Dockerfile differs from opm's:\n--- opm\n%s\n--- ours\n%s", want, got)
	}
}

// The catalog images are built from the opm this module is built with.
func TestOpmImageIsTheModulesOperatorRegistry(t *testing.T) {
	raw, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse("go.mod", raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range mod.Require {
		if req.Mod.Path == "github.com/operator-framework/operator-registry" {
			if !strings.HasSuffix(render.OpmImage, ":"+req.Mod.Version) {
				t.Errorf("OpmImage %s does not match operator-registry %s", render.OpmImage, req.Mod.Version)
			}
			return
		}
	}
	t.Error("go.mod does not require operator-registry")
}

func TestOpmValidatesBothModes(t *testing.T) {
	opm := testutil.Opm(t)
	published := t.TempDir()
	if err := generateTo(t, published, "registry.example/{{.Package}}-bundle:v{{.Version}}", drivers.All()); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"..", published} {
		for catalog, minors := range definition.CatalogMinors(drivers.All()) {
			for _, m := range minors {
				run(t, opm, "validate", tree.Path(filepath.Join(root, string(catalog)), m))
			}
		}
	}
	for _, b := range loadBundles(t, filepath.Join(published, "certified")) {
		props, err := property.Parse(b.Properties)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.Image, "registry.example/"+b.Package+"-bundle:v") || len(props.BundleObjects) != 0 || len(props.CSVMetadatas) != 1 {
			t.Errorf("published bundle %s: image %q, %d embedded objects, %d csv metadata", b.Name, b.Image, len(props.BundleObjects), len(props.CSVMetadatas))
		}
	}
	for _, b := range loadBundles(t, "../certified") {
		props, _ := property.Parse(b.Properties)
		if b.Image != "" || len(props.BundleObjects) == 0 {
			t.Errorf("offline bundle %s: image %q, %d embedded objects", b.Name, b.Image, len(props.BundleObjects))
		}
	}
}

// loadBundles reads the bundles of every minor's catalog of a tree.
func loadBundles(t *testing.T, root string) []declcfg.Bundle {
	t.Helper()
	tr, err := tree.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []declcfg.Bundle
	for _, m := range tr.Minors {
		cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(tr.Path(m)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cfg.Bundles...)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no bundle", root)
	}
	return out
}

// Bad input writes nothing: the output directory keeps exactly what it had.
func TestGenerateWritesNothingOnBadInput(t *testing.T) {
	tests := []struct {
		name        string
		bundleImage string
		mutate      func(ops []definition.Operator)
		want        string
	}{
		{"invalid definition", "", func(ops []definition.Operator) { ops[1].Releases[2].SkipRange = "<<" }, "invalid operator definitions"},
		{"release without a bundle directory", "", func(ops []definition.Operator) {
			ops[3].Releases = append(ops[3].Releases, ops[3].Releases[0])
			ops[3].Releases[1].Version = "4.6.0"
			ops[3].Releases[1].Replaces = "manila-csi-driver-operator.v4.5.0"
		}, "manila-csi-driver-operator.v4.6.0: rendering ../../bundle/manila-csi-driver-operator/4.6.0 (run `csi-olm bundle generate` first)"},
		{"template that does not parse", "registry.example/{{.Package", nil, "BundleImage: template"},
		{"template with an unknown field", "registry.example/{{.Flavour}}:v1", nil, "can't evaluate field Flavour"},
		{"template that gives no image reference", "Registry Example/{{.Package}}", nil, `which is not an image reference`},
		{"certified head that misses a community version", "", func(ops []definition.Operator) {
			ops[1].Releases[2].SkipRange = ">=0.0.7 <4.11.0"
		}, "has no edge from community bundle aws-efs-operator.v0.0.6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			if err := generateTo(t, out, "", drivers.All()); err != nil {
				t.Fatal(err)
			}
			before := testutil.Snapshot(t, out)
			ops := drivers.All()
			if tt.mutate != nil {
				tt.mutate(ops)
			}
			err := generateTo(t, out, tt.bundleImage, ops)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			testutil.AssertUnchanged(t, out, before)
		})
	}
}

func TestMain(m *testing.M) {
	// operator-registry's bundle parser logs every optional file it does not find.
	logrus.SetLevel(logrus.WarnLevel)
	os.Exit(m.Run())
}
