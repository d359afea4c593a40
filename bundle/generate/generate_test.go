package generate_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/generate"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// The committed bundles under bundle/ are golden files of this package too.
var update = flag.Bool("update", false, "rewrite the committed bundles (as `make bundle` does)")

func TestGenerateWritesEveryBundle(t *testing.T) {
	out := t.TempDir()
	var log bytes.Buffer
	// As `csi-olm bundle generate` runs it: the test manifests are golden files under bundle/ too.
	g := &generate.Generate{OutputDir: out, Operators: drivers.All(), TestManifests: drivers.TestManifests(), Out: &log}
	if err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	files := testutil.Snapshot(t, out)
	for _, dir := range []string{"aws-efs-operator/0.0.6", "aws-efs-operator/4.11.0", "aws-ebs-csi-driver-operator/4.5.0", "manila-csi-driver-operator/4.5.0"} {
		for _, f := range []string{"bundle.Dockerfile", "metadata/annotations.yaml"} {
			if _, ok := files[filepath.Join(dir, f)]; !ok {
				t.Errorf("%s/%s was not written", dir, f)
			}
		}
	}
	if n := strings.Count(log.String(), "wrote "); n != 9 {
		t.Errorf("reported %d files written, want 8 bundles and the EFS test manifest:\n%s", n, log.String())
	}
	if _, ok := files[filepath.Join("drivers", "efsdriver", "testing", "manifest.yaml")]; !ok {
		t.Error("the EFS test manifest was not written")
	}
	// The generated tree equals the committed one, which `make verify` also checks with git.
	testutil.CheckGolden(t, "..", files, *update, "run `make bundle` or `go test ./bundle/generate -update`")
}

func TestGenerateReplacesStaleVersions(t *testing.T) {
	out := t.TempDir()
	stale := filepath.Join(out, "aws-efs-operator", "0.0.1", "metadata")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	g := &generate.Generate{OutputDir: out, Operators: drivers.All(), Out: &bytes.Buffer{}}
	if err := g.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "aws-efs-operator", "0.0.1")); !os.IsNotExist(err) {
		t.Errorf("a version no definition has survived generation: %v", err)
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("staging left behind: %s", e.Name())
		}
	}
}

// Bad input writes nothing: the output directory keeps exactly what it had.
func TestGenerateWritesNothingOnBadInput(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(ops []definition.Operator)
		want   string
	}{
		{"invalid definition", func(ops []definition.Operator) { ops[1].Releases[1].Replaces = "nowhere.v1.0.0" }, "invalid operator definitions, nothing was written"},
		{"bundle the validators reject", func(ops []definition.Operator) { ops[3].Categories = []string{"Filing Cabinets"} }, `generated bundles fail validation, nothing was written`},
		{"unexplained warning", func(ops []definition.Operator) { ops[2].Waivers = nil }, `channel(s) ["preview"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			g := &generate.Generate{OutputDir: out, Operators: drivers.All(), Out: &bytes.Buffer{}}
			if err := g.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(out, "keep.txt"), []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := testutil.Snapshot(t, out)

			ops := drivers.All()
			tt.mutate(ops)
			g = &generate.Generate{OutputDir: out, Operators: ops, Out: &bytes.Buffer{}}
			err := g.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			testutil.AssertUnchanged(t, out, before)
		})
	}
}

// A test manifest that does not render writes nothing either, bundles included.
func TestGenerateWritesNothingOnBadTestManifest(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testutil.Snapshot(t, out)
	manifests := drivers.TestManifests()
	for name, m := range manifests {
		m.StorageClass.FromName = true // a second source beside FromExistingClassName
		manifests[name] = m
	}
	g := &generate.Generate{OutputDir: out, Operators: drivers.All(), TestManifests: manifests, Out: &bytes.Buffer{}}
	err := g.Run(context.Background())
	if want := "StorageClass sets 2 sources, want at most one"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want one containing %q", err, want)
	}
	testutil.AssertUnchanged(t, out, before)
}
