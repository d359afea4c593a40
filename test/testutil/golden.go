package testutil

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// CheckGolden compares generated files, by path relative to dir, with the golden files committed
// there. A mismatch fails the test with a line diff (-committed +generated) and says how to
// update; with update set, the generated files are written instead.
func CheckGolden(t testing.TB, dir string, got map[string]string, update bool, howToUpdate string) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(got)) {
		p := filepath.Join(dir, name)
		if update {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(got[name]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("golden file %s: %v (%s)", p, err, howToUpdate)
			continue
		}
		if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got[name], "\n")); diff != "" {
			t.Errorf("golden file %s differs from what the code generates (%s); -committed +generated:\n%s", p, howToUpdate, diff)
		}
	}
}

// CheckGoldenTree is CheckGolden for a directory that holds only generated files: a file in it
// that is no longer generated fails the test too, or is removed when updating.
func CheckGoldenTree(t testing.TB, dir string, got map[string]string, update bool, howToUpdate string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if _, ok := got[filepath.ToSlash(rel)]; ok {
			return nil
		}
		if update {
			return os.Remove(p)
		}
		t.Errorf("golden file %s is no longer generated (%s)", p, howToUpdate)
		return nil
	})
	if err != nil && !(update && os.IsNotExist(err)) {
		t.Errorf("reading golden directory %s: %v (%s)", dir, err, howToUpdate)
	}
	CheckGolden(t, dir, got, update, howToUpdate)
}
