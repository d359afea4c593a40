// Package dependency is the one reading, for OLM v0, of what a bundle requires of other
// operators and which packages can provide it, and of the packages a resolution can therefore
// reach. The catalog index (for `simulate`'s scope and `diff`'s unchanged packages) and OLM's
// resolver lanes (internal/olmresolver) both read dependencies here, so they cannot disagree on
// what a package may pull in.
//
// OLM's resolver (resolver.go's legacyPredicateParsers) turns three required property types into
// predicates over every catalog's bundles: olm.gvk.required (bundles providing the API in an
// olm.gvk property), olm.package.required (bundles of the package) and olm.label.required
// (bundles carrying the label in an olm.label property). An olm.constraint is an expression that
// may name any package, API or property: what it reaches is read as everything.
package dependency

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
)

// The property types OLM reads that declcfg's property package has no constant for.
const (
	// TypeLabel is a label a bundle provides.
	TypeLabel = "olm.label"
	// TypeLabelRequired asks for a bundle that provides the label.
	TypeLabelRequired = "olm.label.required"
)

// Property is a bundle property as both catalog formats carry it: its type and its JSON value.
type Property struct {
	Type  string
	Value []byte
}

// FromDeclcfg are a file-based catalog bundle's properties.
func FromDeclcfg(props []property.Property) []Property {
	out := make([]Property, len(props))
	for i, p := range props {
		out[i] = Property{Type: p.Type, Value: p.Value}
	}
	return out
}

// FromAPI are the properties of a bundle as the registry API serves it, as OLM's cache holds it.
func FromAPI(props []*api.Property) []Property {
	out := make([]Property, len(props))
	for i, p := range props {
		out[i] = Property{Type: p.Type, Value: []byte(p.Value)}
	}
	return out
}

// Requirements are what bundles need other operators to provide.
type Requirements struct {
	GVKs     []property.GVK
	Packages []string
	Labels   []string
	// Anything: an olm.constraint, whose expression may name any package, API or property.
	Anything bool
}

// Provided are what bundles offer other operators' requirements besides their package.
type Provided struct {
	GVKs   []property.GVK
	Labels []string
}

// Read decodes what a bundle requires and provides. A property whose value does not decode is
// an error, one per property, joined; what does decode is returned all the same.
func Read(props []Property) (Requirements, Provided, error) {
	var r Requirements
	var p Provided
	var errs []error
	for _, prop := range props {
		var err error
		switch prop.Type {
		case property.TypeGVKRequired:
			var g property.GVKRequired
			if err = json.Unmarshal(prop.Value, &g); err == nil {
				r.GVKs = append(r.GVKs, property.GVK(g))
			}
		case property.TypePackageRequired:
			var pr property.PackageRequired
			if err = json.Unmarshal(prop.Value, &pr); err == nil {
				r.Packages = append(r.Packages, pr.PackageName)
			}
		case TypeLabelRequired:
			var l struct{ Label string }
			if err = json.Unmarshal(prop.Value, &l); err == nil {
				r.Labels = append(r.Labels, l.Label)
			}
		case property.TypeConstraint:
			r.Anything = true
		case property.TypeGVK:
			var g property.GVK
			if err = json.Unmarshal(prop.Value, &g); err == nil {
				p.GVKs = append(p.GVKs, g)
			}
		case TypeLabel:
			var l struct{ Label string }
			if err = json.Unmarshal(prop.Value, &l); err == nil {
				p.Labels = append(p.Labels, l.Label)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", prop.Type, prop.Value, err))
		}
	}
	return r, p, errors.Join(errs...)
}

// Graph is which packages each package's bundles can pull into a resolution, across catalogs: OLM
// looks a requirement up in every CatalogSource of the namespace. Once built, it is safe for
// concurrent reads.
type Graph struct {
	needs  map[string]Requirements
	gvks   map[property.GVK][]string
	labels map[string][]string
	pkgs   []string
}

// NewGraph is an empty graph.
func NewGraph() *Graph {
	return &Graph{needs: map[string]Requirements{}, gvks: map[property.GVK][]string{}, labels: map[string][]string{}}
}

// Add records a bundle of pkg. A property that does not decode is returned as an error and left
// out; the rest of the bundle is recorded.
func (g *Graph) Add(pkg string, props []Property) error {
	r, p, err := Read(props)
	if _, ok := g.needs[pkg]; !ok {
		g.pkgs = append(g.pkgs, pkg)
	}
	g.needs[pkg] = merge(g.needs[pkg], r)
	for _, gvk := range p.GVKs {
		g.gvks[gvk] = addOnce(g.gvks[gvk], pkg)
	}
	for _, l := range p.Labels {
		g.labels[l] = addOnce(g.labels[l], pkg)
	}
	return err
}

// Reach is the roots, the packages that can provide what extra requires, and what those can pull
// in, transitively: every package a resolution of the roots' operators can read. Nil means every
// package: an olm.constraint is among them.
func (g *Graph) Reach(roots []string, extra ...Requirements) map[string]bool {
	out := map[string]bool{}
	var queue []string
	add := func(pkg string) {
		if pkg != "" && !out[pkg] {
			out[pkg] = true
			queue = append(queue, pkg)
		}
	}
	for _, pkg := range roots {
		add(pkg)
	}
	for _, r := range extra {
		if r.Anything {
			return nil
		}
		for _, pkg := range g.providersOf(r) {
			add(pkg)
		}
	}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if g.needs[pkg].Anything {
			return nil
		}
		for _, dep := range g.pulls(pkg) {
			add(dep)
		}
	}
	return out
}

// Dependents are the packages whose resolutions can read one of changed: changed itself and every
// package that can pull one of them in, transitively. A package with an olm.constraint can pull
// in anything, so it is a dependent as soon as any package changed.
func (g *Graph) Dependents(changed map[string]bool) map[string]bool {
	pulledBy := map[string][]string{}
	var anything []string
	for _, pkg := range g.pkgs {
		if g.needs[pkg].Anything {
			anything = append(anything, pkg)
		}
		for _, dep := range g.pulls(pkg) {
			pulledBy[dep] = append(pulledBy[dep], pkg)
		}
	}
	out := map[string]bool{}
	var queue []string
	add := func(pkg string) {
		if !out[pkg] {
			out[pkg] = true
			queue = append(queue, pkg)
		}
	}
	for pkg, c := range changed {
		if c {
			add(pkg)
		}
	}
	if len(out) > 0 {
		for _, pkg := range anything {
			add(pkg)
		}
	}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, by := range pulledBy[pkg] {
			add(by)
		}
	}
	return out
}

// pulls are the packages pkg's own requirements can pull in.
func (g *Graph) pulls(pkg string) []string { return g.providersOf(g.needs[pkg]) }

func (g *Graph) providersOf(r Requirements) []string {
	out := slices.Clone(r.Packages)
	for _, gvk := range r.GVKs {
		out = append(out, g.gvks[gvk]...)
	}
	for _, l := range r.Labels {
		out = append(out, g.labels[l]...)
	}
	return out
}

// merge adds o's requirements to r's, each once: a package's bundles mostly need the same, and a
// tree of per-minor catalogs has the same package in each minor.
func merge(r, o Requirements) Requirements {
	out := Requirements{GVKs: r.GVKs, Packages: r.Packages, Labels: r.Labels, Anything: r.Anything || o.Anything}
	for _, gvk := range o.GVKs {
		out.GVKs = addOnce(out.GVKs, gvk)
	}
	for _, pkg := range o.Packages {
		out.Packages = addOnce(out.Packages, pkg)
	}
	for _, l := range o.Labels {
		out.Labels = addOnce(out.Labels, l)
	}
	return out
}

func addOnce[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
