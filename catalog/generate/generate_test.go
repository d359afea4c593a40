package generate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/sirupsen/logrus"
	"golang.org/x/mod/modfile"

	d "github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/catalog/generate"
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

func generateTo(t *testing.T, out, bundleImage string, ops []d.Operator) error {
	t.Helper()
	g := &generate.Generate{BundleDir: bundleDir, OutputDir: out, BundleImage: bundleImage, Operators: ops, Out: &bytes.Buffer{}}
	return g.Run(context.Background())
}

// The committed catalogs are this package's golden output.
var update = flag.Bool("update", false, "rewrite the committed catalogs (as `make catalog` does)")

func TestGenerateMatchesCommittedCatalogs(t *testing.T) {
	out := t.TempDir()
	if err := generateTo(t, out, "", drivers.All()); err != nil {
		t.Fatal(err)
	}
	got := testutil.Snapshot(t, out)
	// Each catalog directory holds only generated files; the Dockerfiles sit next to the sources.
	trees := map[string]map[string]string{}
	loose := map[string]string{}
	for name, content := range got {
		if top, rest, ok := strings.Cut(filepath.ToSlash(name), "/"); ok {
			if trees[top] == nil {
				trees[top] = map[string]string{}
			}
			trees[top][rest] = content
		} else {
			loose[name] = content
		}
	}
	const how = "run `make catalog` or `go test ./catalog/generate -update`"
	for top, files := range trees {
		testutil.CheckGoldenTree(t, filepath.Join("..", top), files, *update, how)
	}
	testutil.CheckGolden(t, "..", loose, *update, how)
	for _, want := range []string{"community/aws-efs-operator/catalog.json", "certified/aws-efs-operator/catalog.json",
		"certified/aws-ebs-csi-driver-operator/catalog.json", "certified/manila-csi-driver-operator/catalog.json",
		"community.Dockerfile", "certified.Dockerfile"} {
		if _, ok := got[want]; !ok {
			t.Errorf("%s was not written", want)
		}
	}
}

// TestCatalogsFollowTheDefinitions reads the generated catalogs back and checks every package,
// default channel, channel entry and edge against the definitions.
func TestCatalogsFollowTheDefinitions(t *testing.T) {
	for _, o := range drivers.All() {
		cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(filepath.Join("..", string(o.Catalog))))
		if err != nil {
			t.Fatal(err)
		}
		var pkg *declcfg.Package
		for i := range cfg.Packages {
			if cfg.Packages[i].Name == o.Package {
				pkg = &cfg.Packages[i]
			}
		}
		if pkg == nil || pkg.DefaultChannel != o.DefaultChannel {
			t.Fatalf("%s: package %s missing or with another default channel: %+v", o.Catalog, o.Package, pkg)
		}
		entries := map[string]declcfg.ChannelEntry{}
		for _, ch := range cfg.Channels {
			for _, e := range ch.Entries {
				if ch.Package == o.Package {
					entries[ch.Name+"/"+e.Name] = e
				}
			}
		}
		for _, r := range o.Releases {
			for _, ch := range r.Channels {
				e, ok := entries[ch+"/"+o.CSVName(r.Version)]
				if !ok {
					t.Errorf("%s: %s is not in channel %s", o.Catalog, o.CSVName(r.Version), ch)
					continue
				}
				if e.Replaces != r.Replaces || e.SkipRange != r.SkipRange || strings.Join(e.Skips, ",") != strings.Join(r.Skips, ",") {
					t.Errorf("%s: entry %+v does not carry the definition's edges (replaces %q, skips %v, skipRange %q)", o.Catalog, e, r.Replaces, r.Skips, r.SkipRange)
				}
			}
		}
		if o.Deprecation != "" && (len(cfg.Deprecations) != 1 || cfg.Deprecations[0].Entries[0].Message != o.Deprecation) {
			t.Errorf("%s: deprecation of %s missing: %+v", o.Catalog, o.Package, cfg.Deprecations)
		}
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
			got, err := generate.RenderBundle(dir, "")
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
	if err := os.Mkdir(filepath.Join(root, "certified"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, opm, "generate", "dockerfile", filepath.Join(root, "certified"), "-i", generate.OpmImage, "-b", generate.OpmImage)
	want, err := os.ReadFile(filepath.Join(root, "certified.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if got := generate.Dockerfile("certified", generate.OpmImage, generate.OpmImage); !bytes.Equal(got, want) {
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
			if !strings.HasSuffix(generate.OpmImage, ":"+req.Mod.Version) {
				t.Errorf("OpmImage %s does not match operator-registry %s", generate.OpmImage, req.Mod.Version)
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
	for _, dir := range []string{"../community", "../certified", filepath.Join(published, "community"), filepath.Join(published, "certified")} {
		run(t, opm, "validate", dir)
	}
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(filepath.Join(published, "certified")))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range cfg.Bundles {
		props, err := property.Parse(b.Properties)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.Image, "registry.example/"+b.Package+"-bundle:v") || len(props.BundleObjects) != 0 || len(props.CSVMetadatas) != 1 {
			t.Errorf("published bundle %s: image %q, %d embedded objects, %d csv metadata", b.Name, b.Image, len(props.BundleObjects), len(props.CSVMetadatas))
		}
	}
	offline, err := declcfg.LoadFS(context.Background(), os.DirFS("../certified"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range offline.Bundles {
		props, _ := property.Parse(b.Properties)
		if b.Image != "" || len(props.BundleObjects) == 0 {
			t.Errorf("offline bundle %s: image %q, %d embedded objects", b.Name, b.Image, len(props.BundleObjects))
		}
	}
}

// Bad input writes nothing: the output directory keeps exactly what it had.
func TestGenerateWritesNothingOnBadInput(t *testing.T) {
	tests := []struct {
		name        string
		bundleImage string
		mutate      func(ops []d.Operator)
		want        string
	}{
		{"invalid definition", "", func(ops []d.Operator) { ops[1].Releases[2].SkipRange = "<<" }, "invalid operator definitions"},
		{"release without a bundle directory", "", func(ops []d.Operator) {
			ops[3].Releases = append(ops[3].Releases, ops[3].Releases[0])
			ops[3].Releases[1].Version = "4.6.0"
			ops[3].Releases[1].Replaces = "manila-csi-driver-operator.v4.5.0"
		}, "manila-csi-driver-operator.v4.6.0: rendering ../../bundle/manila-csi-driver-operator/4.6.0 (run `csi-olm bundle generate` first)"},
		{"template that does not parse", "registry.example/{{.Package", nil, "BundleImage: template"},
		{"template with an unknown field", "registry.example/{{.Flavour}}:v1", nil, "can't evaluate field Flavour"},
		{"template that gives no image reference", "Registry Example/{{.Package}}", nil, `which is not an image reference`},
		{"certified head that misses a community version", "", func(ops []d.Operator) {
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
