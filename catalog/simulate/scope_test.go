package simulate

import (
	"maps"
	"slices"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/index"
)

func TestReach(t *testing.T) {
	bundle := func(pkg string, props ...property.Property) declcfg.Bundle {
		return declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: pkg, Name: pkg + ".v1.0.0",
			Properties: append([]property.Property{property.MustBuildPackage(pkg, "1.0.0")}, props...)}
	}
	catalog := func(bundles ...declcfg.Bundle) *index.Catalog {
		cfg := &declcfg.DeclarativeConfig{Bundles: bundles}
		for _, b := range bundles {
			cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: b.Package})
		}
		return index.New(cfg)
	}
	// app needs an API that only the deps catalog's issuer provides; issuer needs the package
	// base; lonely needs nothing; wild carries an olm.constraint.
	main := catalog(
		bundle("app", property.MustBuildGVKRequired("cert.example.com", "v1", "Issuer")),
		bundle("lonely"),
		bundle("wild", property.Property{Type: property.TypeConstraint, Value: []byte(`{"failureMessage":"x","package":{"packageName":"base","versionRange":">=1"}}`)}),
	)
	deps := catalog(
		bundle("issuer", property.MustBuildGVK("cert.example.com", "v1", "Issuer"), property.MustBuildPackageRequired("base", ">=1")),
		bundle("base"),
		bundle("other"),
	)
	for _, tc := range []struct {
		name  string
		roots []string
		want  []string // nil: every package
	}{
		{"nothing asked", nil, []string{}},
		{"a package without dependencies", []string{"lonely"}, []string{"lonely"}},
		{"an API of another catalog, and that provider's package dependency", []string{"app"}, []string{"app", "base", "issuer"}},
		{"a package the catalogs lack", []string{"gone"}, []string{"gone"}},
		{"an olm.constraint may name anything", []string{"lonely", "wild"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reach([]*index.Catalog{main, deps}, tc.roots)
			if tc.want == nil {
				if got != nil {
					t.Errorf("reach = %v, want every package (nil)", slices.Sorted(maps.Keys(got)))
				}
				return
			}
			if got == nil || !slices.Equal(slices.Sorted(maps.Keys(got)), tc.want) {
				t.Errorf("reach = %v, want %v", slices.Sorted(maps.Keys(got)), tc.want)
			}
		})
	}
}
