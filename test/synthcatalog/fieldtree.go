package synthcatalog

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/internal/openshift"
)

// The field tree is per-minor catalogs of the field's shape, as the public repositories of
// OperatorHub catalogs lay them out (catalogs/v4.N/<package>/): one field catalog per OpenShift
// minor from 4.12 to 4.22, each with about 35 packages and 800 bundles, and what happens between
// consecutive minors in the field:
//   - most packages carry over, releasing anew in some minors;
//   - some packages are not in every minor's index;
//   - some pull their newest release from the next minor's index, so that the clusters that
//     installed it are stranded when they upgrade;
//   - some cap the cluster at their minor with olm.maxOpenShiftVersion, others at the next one;
//   - some are versioned with OpenShift, one release per minor in channel stable and a channel
//     named after the minor, reaching the older ones by skipRange;
//   - cert-manager, which packages depend on, is in every minor's index.

// FieldTreeMinors are the minors of the field tree, oldest first.
func FieldTreeMinors() []openshift.Minor {
	var out []openshift.Minor
	for n := 12; n <= 22; n++ {
		out = append(out, openshift.Minor{Major: 4, Minor: n})
	}
	return out
}

// What the field tree's packages do across minors, by their index into the field catalog.
const (
	// FieldTreeAbsent packages ((i+k)%10) are not in the k-th minor's index.
	FieldTreeAbsent = 9
	// FieldTreeReleasing packages ((i+k)%3) release anew in the k-th minor.
	FieldTreeReleasing = 0
	// FieldTreePulling packages (i%4) pull their newest release from every odd minor's index.
	FieldTreePulling = 2
	// FieldTreeCappedAtMinor packages (i%10) set olm.maxOpenShiftVersion to their minor: they
	// block every cluster upgrade.
	FieldTreeCappedAtMinor = 4
	// FieldTreeCappedAtNext packages (i%10) set it to the next minor.
	FieldTreeCappedAtNext = 5
)

// FieldTreeVersioned are the packages versioned with OpenShift.
var FieldTreeVersioned = []int{8, 16}

// FieldTree builds the catalog of each minor of the field tree.
func FieldTree() (map[openshift.Minor]*declcfg.DeclarativeConfig, error) {
	out := map[openshift.Minor]*declcfg.DeclarativeConfig{}
	for k, m := range FieldTreeMinors() {
		field, deps := FieldConfigs()
		for i := range FieldPackages {
			pkg := FieldPackage(i)
			switch {
			case (i+k)%10 == FieldTreeAbsent:
				dropPackage(field, pkg)
				continue
			case slices.Contains(FieldTreeVersioned, i):
				dropPackage(field, pkg)
				addVersionedPackage(field, pkg, m)
				continue
			}
			// The releases of the minors so far: a package that released in an earlier minor
			// still carries that release.
			for j := 0; j <= k; j++ {
				if (i+j)%3 == FieldTreeReleasing {
					if err := AddFieldRelease(field, pkg, fmt.Sprintf("1.%d.0", j)); err != nil {
						return nil, err
					}
				}
			}
			if i%4 == FieldTreePulling && k%2 == 1 {
				pullHead(field, pkg)
			}
			switch i % 10 {
			case FieldTreeCappedAtMinor:
				capAt(field, pkg, m)
			case FieldTreeCappedAtNext:
				capAt(field, pkg, m.Next())
			}
		}
		field.Packages = append(field.Packages, deps.Packages...)
		field.Channels = append(field.Channels, deps.Channels...)
		field.Bundles = append(field.Bundles, deps.Bundles...)
		out[m] = field
	}
	return out, nil
}

// WriteFieldTree writes the field tree's first n minors under root as the field's repositories
// lay them out: root/v4.N/<package>/catalog.json.
func WriteFieldTree(root string, n int) error {
	minors, err := FieldTree()
	if err != nil {
		return err
	}
	for _, m := range FieldTreeMinors()[:n] {
		cfg := minors[m]
		if err := declcfg.WriteFS(*cfg, filepath.Join(root, m.Index()), declcfg.WriteJSON, ".json"); err != nil {
			return err
		}
	}
	return nil
}

func dropPackage(cfg *declcfg.DeclarativeConfig, pkg string) {
	cfg.Packages = slices.DeleteFunc(cfg.Packages, func(p declcfg.Package) bool { return p.Name == pkg })
	cfg.Channels = slices.DeleteFunc(cfg.Channels, func(c declcfg.Channel) bool { return c.Package == pkg })
	cfg.Bundles = slices.DeleteFunc(cfg.Bundles, func(b declcfg.Bundle) bool { return b.Package == pkg })
	cfg.Deprecations = slices.DeleteFunc(cfg.Deprecations, func(d declcfg.Deprecation) bool { return d.Package == pkg })
}

// addVersionedPackage is an operator versioned with OpenShift, as OpenShift's storage operators
// are: the minor's release only, in stable and the minor's channel, skipping every older one.
func addVersionedPackage(cfg *declcfg.DeclarativeConfig, pkg string, m openshift.Minor) {
	version := m.String() + ".0"
	releases := []fieldRelease{{version: version, skip: ">=4.0.0 <" + version}}
	ch := channel(pkg, "stable", releases)
	minorCh := channel(pkg, m.String(), releases)
	addPackage(cfg, pkg, releases, ch, minorCh)
	capAt(cfg, pkg, m.Next())
}

// pullHead removes the newest release of a package: its bundle and its channel entries.
func pullHead(cfg *declcfg.DeclarativeConfig, pkg string) {
	var newest string
	for _, b := range cfg.Bundles {
		if b.Package == pkg {
			newest = b.Name // AddFieldRelease appends: the last bundle is the newest
		}
	}
	cfg.Bundles = slices.DeleteFunc(cfg.Bundles, func(b declcfg.Bundle) bool { return b.Name == newest })
	for i := range cfg.Channels {
		if cfg.Channels[i].Package == pkg {
			cfg.Channels[i].Entries = slices.DeleteFunc(cfg.Channels[i].Entries, func(e declcfg.ChannelEntry) bool { return e.Name == newest })
		}
	}
}

// capAt sets olm.maxOpenShiftVersion on every bundle of a package.
func capAt(cfg *declcfg.DeclarativeConfig, pkg string, max openshift.Minor) {
	value, _ := json.Marshal(max.String())
	for i := range cfg.Bundles {
		if cfg.Bundles[i].Package == pkg {
			cfg.Bundles[i].Properties = append(cfg.Bundles[i].Properties, property.Property{Type: openshift.MaxVersionProperty, Value: value})
		}
	}
}
