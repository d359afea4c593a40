package dependency_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"

	"github.com/csi-olm/csi-olm/internal/dependency"
)

func label(typ, l string) property.Property {
	return property.Property{Type: typ, Value: []byte(`{"label":"` + l + `"}`)}
}

// graph: app needs an API only issuer provides; issuer needs the package base; lonely needs
// nothing; wild carries an olm.constraint; tagged needs a label only labelled carries.
func graph(t *testing.T) *dependency.Graph {
	t.Helper()
	g := dependency.NewGraph()
	for pkg, props := range map[string][]property.Property{
		"app":      {property.MustBuildGVKRequired("cert.example.com", "v1", "Issuer")},
		"lonely":   nil,
		"wild":     {{Type: property.TypeConstraint, Value: []byte(`{"failureMessage":"x","package":{"packageName":"base","versionRange":">=1"}}`)}},
		"issuer":   {property.MustBuildGVK("cert.example.com", "v1", "Issuer"), property.MustBuildPackageRequired("base", ">=1")},
		"base":     nil,
		"other":    nil,
		"tagged":   {label(dependency.TypeLabelRequired, "fast")},
		"labelled": {label(dependency.TypeLabel, "fast")},
	} {
		if err := g.Add(pkg, dependency.FromDeclcfg(append([]property.Property{property.MustBuildPackage(pkg, "1.0.0")}, props...))); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

func sorted(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

func TestReach(t *testing.T) {
	g := graph(t)
	for _, tc := range []struct {
		name  string
		roots []string
		extra []dependency.Requirements
		want  []string // nil: every package
	}{
		{"nothing asked", nil, nil, []string{}},
		{"a package without dependencies", []string{"lonely"}, nil, []string{"lonely"}},
		{"an API of another package, and that provider's package dependency", []string{"app"}, nil, []string{"app", "base", "issuer"}},
		{"a label, provided by another package", []string{"tagged"}, nil, []string{"labelled", "tagged"}},
		{"a package the graph lacks", []string{"gone"}, nil, []string{"gone"}},
		{"an olm.constraint may name anything", []string{"lonely", "wild"}, nil, nil},
		{"an installed operator's own requirements", []string{"lonely"}, []dependency.Requirements{{Labels: []string{"fast"}}}, []string{"labelled", "lonely"}},
		{"an installed operator's own constraint", []string{"lonely"}, []dependency.Requirements{{Anything: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := g.Reach(tc.roots, tc.extra...)
			if tc.want == nil {
				if got != nil {
					t.Errorf("Reach = %v, want every package (nil)", sorted(got))
				}
				return
			}
			if got == nil || !slices.Equal(sorted(got), tc.want) {
				t.Errorf("Reach = %v, want %v", sorted(got), tc.want)
			}
		})
	}
}

func TestDependents(t *testing.T) {
	g := graph(t)
	for _, tc := range []struct {
		name    string
		changed []string
		want    []string
	}{
		{"nothing changed", nil, []string{}},
		{"a package nobody needs", []string{"other"}, []string{"other", "wild"}},
		{"a package needed through an API", []string{"base"}, []string{"app", "base", "issuer", "wild"}},
		{"a label's provider", []string{"labelled"}, []string{"labelled", "tagged", "wild"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := map[string]bool{"lonely": false}
			for _, pkg := range tc.changed {
				changed[pkg] = true
			}
			if got := sorted(g.Dependents(changed)); !slices.Equal(got, tc.want) {
				t.Errorf("Dependents = %v, want %v", got, tc.want)
			}
		})
	}
}

// The registry API's properties (OLM's cache) read as the file-based catalog's do, and a
// property that does not decode is named, every one of them, with the others kept.
func TestRead(t *testing.T) {
	r, p, err := dependency.Read(dependency.FromAPI([]*api.Property{
		{Type: property.TypeGVKRequired, Value: `{"group":"g","version":"v1","kind":"K"}`},
		{Type: property.TypePackageRequired, Value: `{"packageName":"base","versionRange":">=1"}`},
		{Type: dependency.TypeLabelRequired, Value: `{"label":"fast"}`},
		{Type: dependency.TypeLabel, Value: `{"label":"slow"}`},
		{Type: property.TypeGVK, Value: `{"group":"g","version":"v1","kind":"Mine"}`},
		{Type: property.TypePackageRequired, Value: `{"packageName":`},
		{Type: dependency.TypeLabelRequired, Value: `[]`},
		{Type: "olm.maxOpenShiftVersion", Value: `"4.12"`},
	}))
	want := dependency.Requirements{
		GVKs: []property.GVK{{Group: "g", Version: "v1", Kind: "K"}}, Packages: []string{"base"}, Labels: []string{"fast"},
	}
	if !slices.Equal(r.GVKs, want.GVKs) || !slices.Equal(r.Packages, want.Packages) || !slices.Equal(r.Labels, want.Labels) || r.Anything {
		t.Errorf("requirements %+v, want %+v", r, want)
	}
	if !slices.Equal(p.GVKs, []property.GVK{{Group: "g", Version: "v1", Kind: "Mine"}}) || !slices.Equal(p.Labels, []string{"slow"}) {
		t.Errorf("provided %+v", p)
	}
	if err == nil || !strings.Contains(err.Error(), `olm.package.required {"packageName":`) || !strings.Contains(err.Error(), "olm.label.required []") {
		t.Errorf("error %v, want both undecodable properties named", err)
	}
}
