// Package tree is the layout of per-minor catalogs: one file-based catalog per OpenShift minor,
// in a directory named after the minor's index (ROOT/v4.N/<package>/...), each built into its own
// index image, as OpenShift ships its operator indexes and as the field's public catalog
// repositories lay them out. `make catalog` writes the project's catalogs so; the catalog verbs
// read a tree or a single catalog.
package tree

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/distribution/reference"

	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/option"
)

// Tree is a directory of per-minor catalogs.
type Tree struct {
	Dir string
	// Minors are the minors it holds a catalog for, oldest first.
	Minors []openshift.Minor
}

// Path is the catalog directory of minor m.
func (t *Tree) Path(m openshift.Minor) string { return Path(t.Dir, m) }

// Path is the catalog directory of minor m in the tree at root.
func Path(root string, m openshift.Minor) string { return filepath.Join(root, m.Index()) }

// DockerfilePath is where the Dockerfile of minor m's catalog image sits: next to the catalog
// directory, named after it, as `opm generate dockerfile` writes it.
func DockerfilePath(root string, m openshift.Minor) string { return Path(root, m) + ".Dockerfile" }

// Has says whether the tree holds minor m.
func (t *Tree) Has(m openshift.Minor) bool { return slices.Contains(t.Minors, m) }

// Open reads the tree at dir. It is an error for dir to hold no v4.N directory, or anything but
// those and their Dockerfiles: a catalog directory given where a tree is wanted is named as such.
func Open(dir string) (*Tree, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the catalog tree: %w", err)
	}
	t := &Tree{Dir: dir}
	var others []string
	for _, e := range entries {
		m, isMinor := MinorOf(e.Name())
		switch {
		case isMinor && e.IsDir():
			t.Minors = append(t.Minors, m)
		case !e.IsDir() && filepath.Ext(e.Name()) == ".Dockerfile":
		case e.Name()[0] == '.':
		default:
			others = append(others, e.Name())
		}
	}
	if len(t.Minors) == 0 {
		return nil, fmt.Errorf("%s holds no per-minor catalog (a directory v4.N per OpenShift minor)", dir)
	}
	if len(others) > 0 {
		return nil, fmt.Errorf("%s is a tree of per-minor catalogs, but also holds %q: only v4.N directories and their Dockerfiles belong there", dir, others)
	}
	slices.SortFunc(t.Minors, openshift.Minor.Compare)
	return t, nil
}

// IsTree says whether dir holds per-minor catalogs rather than being a catalog itself.
func IsTree(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, isMinor := MinorOf(e.Name()); isMinor && e.IsDir() {
			return true
		}
	}
	return false
}

// MinorOf is the minor of a catalog directory named after its index (ROOT/v4.N), as the trees
// lay them out; false for any other name.
func MinorOf(dir string) (openshift.Minor, bool) {
	base := filepath.Base(dir)
	m, err := openshift.ParseMinor(base)
	return m, err == nil && base[0] == 'v'
}

// minorOfCatalog is the minor a catalog's directory (v4.N) or image tag (:v4.N) names.
func minorOfCatalog(arg string) (openshift.Minor, bool) {
	if _, err := os.Stat(arg); err != nil {
		return openshift.IndexOfImage(arg)
	}
	return MinorOf(arg)
}

// Catalog is one catalog a verb works on: a catalog directory, or one minor of a tree.
type Catalog struct {
	Dir string
	// Community is the community catalog of the same minor, "" when none was given or the
	// community tree lacks the minor.
	Community string
	// Minor is the OpenShift minor whose index the catalog is, nil when its directory does not
	// say (a catalog outside a tree).
	Minor *openshift.Minor
	// Name names it in reports and file names: the directory's name, and for a minor's catalog
	// the tree's name and the minor ("certified-v4.11").
	Name string
}

// Catalogs lists the catalogs a verb given dir and community works on: dir itself, or each minor
// of the tree dir is, paired with the same minor of the community tree. A problem with community
// is an option.Error of the action struct's field Community.
func Catalogs(dir, community string) ([]Catalog, error) {
	if !IsTree(dir) {
		if community != "" && IsTree(community) {
			return nil, option.Errorf("Community", "%s is a tree of per-minor catalogs, but %s is one catalog: give the community catalog of its minor", community, dir)
		}
		c := Catalog{Dir: dir, Community: community, Name: NameOf(dir)}
		if m, ok := minorOfCatalog(dir); ok {
			c.Minor = &m
		}
		return []Catalog{c}, nil
	}
	t, err := Open(dir)
	if err != nil {
		return nil, err
	}
	var ct *Tree
	if community != "" {
		if ct, err = Open(community); err != nil {
			return nil, &option.Error{Field: "Community", Err: err}
		}
	}
	out := make([]Catalog, 0, len(t.Minors))
	for _, m := range t.Minors {
		c := Catalog{Dir: t.Path(m), Minor: &m, Name: NameOf(t.Path(m))}
		if ct != nil && ct.Has(m) {
			c.Community = ct.Path(m)
		}
		out = append(out, c)
	}
	return out, nil
}

// NameOf names the catalog in dir for reports: its directory's name, and for a minor's catalog
// in a tree the tree's name and the minor ("certified-v4.11"), since every tree's minors have the
// same names. A catalog image (dir is no directory here) is named alike: its repository's last
// path element, and the minor its tag names.
func NameOf(dir string) string {
	if _, err := os.Stat(dir); err != nil {
		if named, err := reference.ParseNormalizedNamed(dir); err == nil {
			name := path.Base(reference.Path(named))
			if m, ok := openshift.IndexOfImage(dir); ok {
				name += "-" + m.Index()
			}
			return name
		}
	}
	dir = filepath.Clean(dir)
	if m, ok := MinorOf(dir); ok {
		return filepath.Base(filepath.Dir(dir)) + "-" + m.Index()
	}
	return filepath.Base(dir)
}
