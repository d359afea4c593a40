package tree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/internal/option"
)

func mkdirs(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, ".Dockerfile") {
			if err := os.WriteFile(full, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCatalogsPairsEachMinorWithTheCommunitys(t *testing.T) {
	root := t.TempDir()
	certified, community := filepath.Join(root, "certified"), filepath.Join(root, "community")
	mkdirs(t, certified, "v4.10/p", "v4.9/p", "v4.11/p", "v4.10.Dockerfile")
	mkdirs(t, community, "v4.9/p", "v4.10/p")
	got, err := Catalogs(certified, community)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range got {
		lines = append(lines, c.Name+" "+filepath.Base(c.Dir)+" community="+strings.TrimPrefix(c.Community, root)+" minor="+c.Minor.String())
	}
	want := []string{
		"certified-v4.9 v4.9 community=/community/v4.9 minor=4.9",
		"certified-v4.10 v4.10 community=/community/v4.10 minor=4.10",
		"certified-v4.11 v4.11 community= minor=4.11",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// One minor's catalog is itself a catalog, named after its tree and minor.
	one, err := Catalogs(filepath.Join(certified, "v4.10"), filepath.Join(community, "v4.10"))
	if err != nil || len(one) != 1 || one[0].Name != "certified-v4.10" || one[0].Minor == nil || one[0].Minor.String() != "4.10" {
		t.Errorf("one minor: %+v, %v", one, err)
	}
	// A catalog outside a tree has no minor.
	mkdirs(t, root, "plain/p")
	if plain, err := Catalogs(filepath.Join(root, "plain"), ""); err != nil || plain[0].Minor != nil || plain[0].Name != "plain" {
		t.Errorf("a plain catalog: %+v, %v", plain, err)
	}
}

func TestTreesRefuseWhatTheyCannotPair(t *testing.T) {
	root := t.TempDir()
	mkdirs(t, root, "tree/v4.11/p", "tree/notes", "plain/p", "tree2/v4.11/p")
	if _, err := Open(filepath.Join(root, "tree")); err == nil || !strings.Contains(err.Error(), `also holds ["notes"]`) {
		t.Errorf("a tree with a stray directory: %v", err)
	}
	if _, err := Open(filepath.Join(root, "plain")); err == nil || !strings.Contains(err.Error(), "holds no per-minor catalog") {
		t.Errorf("a plain catalog opened as a tree: %v", err)
	}
	var optErr *option.Error
	_, err := Catalogs(filepath.Join(root, "plain"), filepath.Join(root, "tree2"))
	if !errors.As(err, &optErr) || optErr.Field != "Community" || !strings.Contains(err.Error(), "give the community catalog of its minor") {
		t.Errorf("a plain catalog with a community tree: %v", err)
	}
	_, err = Catalogs(filepath.Join(root, "tree2"), filepath.Join(root, "plain"))
	if !errors.As(err, &optErr) || optErr.Field != "Community" {
		t.Errorf("a tree with a plain community catalog: %v", err)
	}
}
