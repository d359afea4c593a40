// Package badinput runs the corpus of bad inputs (see README.md): every case must be refused with
// the messages it lists, without a panic and without a byte of its input changed.
package badinput_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/lint"
	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/test/clustercorpus"
)

// repoRoot is where case bases are named from.
const repoRoot = "../.."

// caseFile is a case's case.yaml: what is wrong and what the verb must say, and how the input
// tree is made: a copy of a shipped artifact (base), changed by patches and removals, with the
// files of the case's input/ directory laid over it.
type caseFile struct {
	// About says what is wrong, for the reader of a failure.
	About string `json:"about"`
	// Base is a directory of the repository, copied to At in the tree.
	Base string `json:"base,omitempty"`
	At   string `json:"at,omitempty"`
	// Patch maps a YAML file of the tree to RFC 6902 operations on it.
	Patch map[string][]any `json:"patch,omitempty"`
	// Remove lists paths of the tree to delete.
	Remove []string `json:"remove,omitempty"`
	// Release runs the verb as a release does, where it has such a mode.
	Release bool `json:"release,omitempty"`
	// OLMv1 adds OLM v1's limits to a bundle's checks (`bundle validate --olm v1`).
	OLMv1 bool `json:"olmV1,omitempty"`
	// Want lists what the verb's output and error must say, every line.
	Want []string `json:"want"`
}

// verb runs one command on the input tree, writing its report to out.
type verb func(ctx context.Context, input string, c *caseFile, out io.Writer) error

// surfaces are the corpus's directories and the verb each one's cases are fed to.
var surfaces = map[string]verb{
	"catalog": func(ctx context.Context, input string, _ *caseFile, out io.Writer) error {
		return (&validation.Validate{Dir: input, Out: out}).Run(ctx)
	},
	"bundle": func(ctx context.Context, input string, c *caseFile, out io.Writer) error {
		return (&lint.Validate{Paths: []string{input}, Release: c.Release, OLMv1: c.OLMv1, Out: out}).Run(ctx)
	},
}

// clusterSurfaces are the corpus's directories whose cases need a cluster, which this package
// does not start: the test that runs each, and whether its cases are clustercorpus cases, whose
// case.yaml TestCorpus checks here.
var clusterSurfaces = map[string]struct {
	test          string
	clustercorpus bool
}{
	"sharedvolume":     {"sharedvolume/controller TestSharedVolumeCorpus", true},
	"clustercsidriver": {"operator TestClusterCSIDriverCorpus", true},
	"migrate":          {"test/e2e TestMigrateCorpus", false},
}

// TestCorpus runs the cases of the offline surfaces, checks the files of the cluster surfaces'
// cases, counts the cases of every surface, and fails on a directory it knows nothing of, whose
// cases nothing would run.
func TestCorpus(t *testing.T) {
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	counts, runBy := map[string]int{}, map[string]string{}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		surface := d.Name()
		cluster, isCluster := clusterSurfaces[surface]
		if _, offline := surfaces[surface]; !offline && !isCluster {
			t.Errorf("%s/ is neither a surface TestCorpus runs nor a cluster surface it knows: add it to surfaces or clusterSurfaces, or its cases are never run", surface)
			continue
		}
		cases := caseDirs(t, surface)
		counts[surface] = len(cases)
		if isCluster {
			runBy[surface] = cluster.test
			if cluster.clustercorpus {
				// The namespace only fills in $NS: any will do to check the files.
				if _, err := clustercorpus.Load(surface, func(name string) string { return "badinput-" + name }); err != nil {
					t.Errorf("%s: %v", surface, err)
				}
			}
			continue
		}
		runBy[surface] = "TestCorpus, here"
		for _, name := range cases {
			t.Run(surface+"/"+name, func(t *testing.T) {
				runCase(t, surfaces[surface], filepath.Join(surface, name))
			})
		}
	}
	for _, surface := range slices.Sorted(maps.Keys(surfaces)) {
		if _, ok := counts[surface]; !ok {
			t.Errorf("surface %s/ has no directory", surface)
		}
	}
	total := 0
	for _, surface := range slices.Sorted(maps.Keys(counts)) {
		total += counts[surface]
		t.Logf("%s/: %d cases, run by %s", surface, counts[surface], runBy[surface])
	}
	t.Logf("%d cases in all", total)
}

// caseDirs are the case directories of a surface, by name.
func caseDirs(t *testing.T, surface string) []string {
	t.Helper()
	entries, err := os.ReadDir(surface)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

func runCase(t *testing.T, run verb, dir string) {
	raw, err := os.ReadFile(filepath.Join(dir, "case.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c caseFile
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		t.Fatalf("%s/case.yaml: %v", dir, err)
	}
	if c.About == "" || len(c.Want) == 0 {
		t.Fatalf("%s/case.yaml says neither what is wrong nor what must be said", dir)
	}
	input := buildTree(t, dir, &c)
	before := snapshot(t, input)

	var out bytes.Buffer
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s: the verb panicked: %v\n%s", c.About, r, debug.Stack())
			}
		}()
		return run(context.Background(), input, &c, &out)
	}()
	report := out.String()
	if err == nil {
		t.Fatalf("%s: accepted\n%s", c.About, report)
	}
	said := report + "\n" + err.Error()
	t.Logf("%s:\n%s", c.About, said) // what to write a new case's want from: go test -v -run TestCorpus/<surface>/<case>
	for _, w := range c.Want {
		if !strings.Contains(said, strings.ReplaceAll(w, "$INPUT", input)) {
			t.Errorf("%s: the report lacks %q:\n%s", c.About, w, said)
		}
	}
	if after := snapshot(t, input); !maps.Equal(before, after) {
		t.Errorf("%s: the verb changed its input", c.About)
	}
}

// buildTree makes the case's input tree in a temporary directory and returns its path.
func buildTree(t *testing.T, dir string, c *caseFile) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "input")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if c.Base != "" {
		if err := os.CopyFS(filepath.Join(tree, c.At), os.DirFS(filepath.Join(repoRoot, c.Base))); err != nil {
			t.Fatalf("base %s: %v", c.Base, err)
		}
	}
	for file, ops := range c.Patch {
		patchYAML(t, filepath.Join(tree, file), ops)
	}
	for _, p := range c.Remove {
		if err := os.RemoveAll(filepath.Join(tree, p)); err != nil {
			t.Fatal(err)
		}
	}
	overlay := filepath.Join(dir, "input")
	if _, err := os.Stat(overlay); err == nil {
		layOver(t, overlay, tree)
	}
	return tree
}

// patchYAML applies RFC 6902 operations to a YAML file.
func patchYAML(t *testing.T, file string, ops []any) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	opsJSON, err := yaml.Marshal(ops)
	if err == nil {
		opsJSON, err = yaml.YAMLToJSON(opsJSON)
	}
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(opsJSON)
	if err != nil {
		t.Fatalf("patch of %s: %v", file, err)
	}
	if doc, err = patch.Apply(doc); err != nil {
		t.Fatalf("patch of %s: %v", file, err)
	}
	if raw, err = yaml.JSONToYAML(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot is every path of a tree with its type, mode and content (or link target) hash.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var content []byte
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			content = []byte(target)
		case d.Type().IsRegular():
			if content, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		sum := sha256.Sum256(content)
		snap[p] = info.Mode().String() + " " + hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// layOver copies the files of dir over tree, symlinks as links: some cases are about them.
func layOver(t *testing.T, dir, tree string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		dst := filepath.Join(tree, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			_ = os.Remove(dst)
			return os.Symlink(target, dst)
		default:
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, raw, 0o644)
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
}
