package simulate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/simulate"
)

// entry is a channel entry of package "op" by version: the bundle is op.v<v>, and replaces and
// skips name versions too.
type entry struct {
	v, replaces string
	skips       []string
	skipRange   string
}

// pkg is a package "op" of a test catalog: its channels, the versions deprecated, and the
// versions that declare a dependency.
type pkg struct {
	channels   map[string][]entry
	deprecated []string
	depends    []string
}

func opName(v string) string { return "op.v" + v }

// v1Catalog builds a ClusterCatalog serving package op.
func v1Catalog(catalog string, priority int32, p pkg) simulate.V1Catalog {
	cfg := &declcfg.DeclarativeConfig{Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "op", DefaultChannel: "stable"}}}
	seen := map[string]bool{}
	for chName, entries := range p.channels {
		ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: "op", Name: chName}
		for _, e := range entries {
			ce := declcfg.ChannelEntry{Name: opName(e.v), SkipRange: e.skipRange}
			if e.replaces != "" {
				ce.Replaces = opName(e.replaces)
			}
			for _, s := range e.skips {
				ce.Skips = append(ce.Skips, opName(s))
			}
			ch.Entries = append(ch.Entries, ce)
			if !seen[e.v] {
				seen[e.v] = true
				b := declcfg.Bundle{Schema: declcfg.SchemaBundle, Name: opName(e.v), Package: "op", Properties: []property.Property{property.MustBuildPackage("op", e.v)}}
				for _, d := range p.depends {
					if d == e.v {
						b.Properties = append(b.Properties, property.MustBuildPackageRequired("cert-manager", ">=1.0.0"))
					}
				}
				cfg.Bundles = append(cfg.Bundles, b)
			}
		}
		cfg.Channels = append(cfg.Channels, ch)
	}
	if len(p.deprecated) > 0 {
		d := declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: "op"}
		for _, v := range p.deprecated {
			d.Entries = append(d.Entries, declcfg.DeprecationEntry{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: opName(v)}, Message: opName(v) + " is broken"})
		}
		cfg.Deprecations = append(cfg.Deprecations, d)
	}
	return simulate.V1Catalog{Name: catalog, Priority: priority, Config: cfg}
}

func installed(v string) *simulate.V1Installed {
	return &simulate.V1Installed{Name: opName(v), Version: v}
}

// chain is stable: 1.0.0 <- 1.1.0 <- 1.2.0, each replacing the one before.
var chain = pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0"}}}}

// twoChannels: stable ends at 1.1.0; fast goes on to 2.0.0, which skips back to 1.0.0.
var twoChannels = pkg{channels: map[string][]entry{
	"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}},
	"fast":   {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0"}, {v: "2.0.0", replaces: "1.2.0", skipRange: ">=1.0.0 <2.0.0"}},
}}

// The expectations follow operator-controller v1.11.0's CatalogResolver as the package doc states
// it; the error messages are its own, word for word.
func TestResolveV1(t *testing.T) {
	for _, tc := range []struct {
		name     string
		catalogs []simulate.V1Catalog
		req      simulate.V1Request
		want     string // the bundle, @catalog when it matters
		err      string
	}{
		{name: "fresh: the highest version", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{}, want: opName("1.2.0")},
		{name: "fresh: in the version range", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Version: "<1.2.0"}, want: opName("1.1.0")},
		{name: "fresh: a pinned wildcard", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Version: "1.0.x"}, want: opName("1.0.0")},
		{name: "fresh: nothing in range", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Version: ">=3.0.0", Channels: []string{"stable"}},
			err: `no bundles found for package "op" matching version ">=3.0.0" in channels [stable]`},
		{name: "fresh: in a channel", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, twoChannels)}, req: simulate.V1Request{Channels: []string{"stable"}}, want: opName("1.1.0")},
		{name: "fresh: every channel when none is named", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, twoChannels)}, req: simulate.V1Request{}, want: opName("2.0.0")},
		{name: "fresh: a channel the package lacks", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, twoChannels)}, req: simulate.V1Request{Channels: []string{"beta"}},
			err: `no bundles found for package "op" in channels [beta]`},
		{name: "fresh: deprecated last", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: chain.channels, deprecated: []string{"1.2.0"}})}, want: opName("1.1.0")},
		{name: "fresh: deprecated when nothing else is left", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: chain.channels, deprecated: []string{"1.0.0", "1.1.0", "1.2.0"}})}, want: opName("1.2.0")},
		{name: "fresh: a package no catalog has", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Package: "other"},
			err: `no bundles found for package "other"`},

		{name: "pre-release: the highest, when no range is given", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}}}})}, want: opName("1.1.0-rc.1")},
		{name: "pre-release: not in a range that names none", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}}}})}, req: simulate.V1Request{Version: ">=1.0.0"}, want: opName("1.0.0")},
		{name: "pre-release: in a range that names one", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}}}})}, req: simulate.V1Request{Version: ">=1.0.0-0"}, want: opName("1.1.0-rc.1")},
		{name: "pre-release: rc.10 above rc.9", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "0.2.2-rc.9"}, {v: "0.2.2-rc.10", replaces: "0.2.2-rc.9"}}}})}, want: opName("0.2.2-rc.10")},

		{name: "upgrade: one replaces hop", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Installed: installed("1.0.0")}, want: opName("1.1.0")},
		{name: "upgrade: the head stays", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Installed: installed("1.2.0")}, want: opName("1.2.0")},
		{name: "upgrade: skips", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0", skips: []string{"1.0.0"}}}}})},
			req: simulate.V1Request{Installed: installed("1.0.0")}, want: opName("1.2.0")},
		{name: "upgrade: skipRange over replaces, the highest wins", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0", skipRange: ">=1.0.0 <1.2.0"}}}})},
			req: simulate.V1Request{Installed: installed("1.0.0")}, want: opName("1.2.0")},
		// Unlike OLM v0, a bundle that another skips is a target like any other.
		{name: "upgrade: a skipped bundle is a candidate", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.0.0", skips: []string{"1.1.0"}}}}})},
			req: simulate.V1Request{Installed: installed("1.1.0")}, want: opName("1.2.0")},
		{name: "upgrade: the edge must be in a named channel", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.2.0"}}, "fast": {{v: "1.0.0"}, {v: "1.2.0", replaces: "1.0.0"}}}})},
			req: simulate.V1Request{Channels: []string{"stable"}, Installed: installed("1.0.0")}, want: opName("1.0.0")},
		{name: "upgrade: the edge of any channel when none is named", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.2.0"}}, "fast": {{v: "1.0.0"}, {v: "1.2.0", replaces: "1.0.0"}}}})},
			req: simulate.V1Request{Installed: installed("1.0.0")}, want: opName("1.2.0")},
		{name: "upgrade: deprecated last, even below the installed version", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0", skipRange: ">=1.0.0 <1.2.0"}}}, deprecated: []string{"1.2.0"}})},
			req: simulate.V1Request{Installed: installed("1.0.0")}, want: opName("1.1.0")},
		{name: "upgrade: a bundle from elsewhere, nothing upgrades from it", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Installed: &simulate.V1Installed{Name: "community.v0.5.0", Version: "0.5.0"}},
			err: `error upgrading from currently installed version "0.5.0": no bundles found for package "op"`},
		{name: "upgrade: the installed version out of range, no successor in it", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Version: "<1.1.0", Installed: installed("1.2.0")},
			err: `error upgrading from currently installed version "1.2.0": no bundles found for package "op" matching version "<1.1.0"`},
		{name: "upgrade: an installed version that is not semver", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Installed: &simulate.V1Installed{Name: "op.v1", Version: "1"}},
			err: `error walking catalogs: error finding upgrade edges: failed to get version and release of installed bundle: No Major.Minor.Patch elements found`},
		{name: "upgrade: a release in the build metadata", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0+1"}, {v: "1.0.0+2", replaces: "1.0.0+1"}}}})},
			req: simulate.V1Request{Installed: &simulate.V1Installed{Name: opName("1.0.0+1"), Version: "1.0.0+1"}}, want: opName("1.0.0+2")},

		{name: "SelfCertified: any version in range, a downgrade included", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Policy: simulate.SelfCertified, Version: "<1.2.0", Installed: installed("1.2.0")}, want: opName("1.1.0")},
		{name: "SelfCertified: no edge needed", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "2.0.0"}}}})}, req: simulate.V1Request{Policy: simulate.SelfCertified, Installed: installed("1.0.0")}, want: opName("2.0.0")},
		{name: "CatalogProvided: no edge, no move", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "2.0.0"}}}})}, req: simulate.V1Request{Policy: simulate.CatalogProvided, Installed: installed("1.0.0")}, want: opName("1.0.0")},

		{name: "catalogs: equal priority is ambiguous", catalogs: []simulate.V1Catalog{v1Catalog("b", 0, chain), v1Catalog("a", 0, chain)},
			err: `found bundles for package "op" in multiple catalogs with the same priority [a b]`},
		{name: "catalogs: ambiguous on upgrade", catalogs: []simulate.V1Catalog{v1Catalog("a", 0, chain), v1Catalog("b", 0, chain)}, req: simulate.V1Request{Installed: installed("1.0.0"), Channels: []string{"stable"}},
			err: `error upgrading from currently installed version "1.0.0": found bundles for package "op" in channels [stable] in multiple catalogs with the same priority [a b]`},
		{name: "catalogs: the highest priority wins, a lower version", catalogs: []simulate.V1Catalog{v1Catalog("a", 0, chain), v1Catalog("b", 5, pkg{channels: map[string][]entry{"stable": {{v: "0.9.0"}}}})}, want: opName("0.9.0") + "@b"},
		{name: "catalogs: a catalog whose best is deprecated loses, whatever its priority", catalogs: []simulate.V1Catalog{v1Catalog("a", 10, pkg{channels: chain.channels, deprecated: []string{"1.0.0", "1.1.0", "1.2.0"}}), v1Catalog("b", 0, pkg{channels: map[string][]entry{"stable": {{v: "0.9.0"}}}})},
			want: opName("0.9.0") + "@b"},
		// operator-controller names every catalog still in the running, the lower one too.
		{name: "catalogs: a tie at the top lists every catalog", catalogs: []simulate.V1Catalog{v1Catalog("a", 1, chain), v1Catalog("b", 1, chain), v1Catalog("c", 0, chain)},
			err: `found bundles for package "op" in multiple catalogs with the same priority [a b c]`},
		{name: "catalogs: one without the package does not count", catalogs: []simulate.V1Catalog{v1Catalog("a", 0, chain), {Name: "b", Config: &declcfg.DeclarativeConfig{}}}, want: opName("1.2.0") + "@a"},

		{name: "a dependency refuses the chosen bundle", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, pkg{channels: chain.channels, depends: []string{"1.2.0"}})},
			err: `validating bundle "op.v1.2.0": bundle "op.v1.2.0" has a dependency declared via property "olm.package.required" which is currently not supported`},
		{name: "a version range the controller cannot parse", catalogs: []simulate.V1Catalog{v1Catalog("c", 0, chain)}, req: simulate.V1Request{Version: "1.2.3-01"},
			err: `desired version range "1.2.3-01" is invalid: constraint parser error`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Package == "" {
				req.Package = "op"
			}
			got, err := resolveV1(tc.catalogs, req)
			if tc.err != "" {
				var re *simulate.V1ResolutionError
				if err == nil || err.Error() != tc.err || !errors.As(err, &re) {
					t.Fatalf("resolved %+v, error %v: want a V1ResolutionError %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, catalog, _ := strings.Cut(tc.want, "@")
			if got.Name != want || catalog != "" && got.Catalog != catalog {
				t.Errorf("resolved %s from %s, want %s", got.Name, got.Catalog, tc.want)
			}
		})
	}
}

func TestResolveV1Reports(t *testing.T) {
	c := v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0+1"}, {v: "1.0.0+2", replaces: "1.0.0+1"}}}, deprecated: []string{"1.0.0+1", "1.0.0+2"}})
	got, err := resolveV1([]simulate.V1Catalog{c}, simulate.V1Request{Package: "op"})
	if err != nil {
		t.Fatal(err)
	}
	// The version as status.install.bundle records it, the release back in the build metadata;
	// the deprecation the Deprecated condition carries.
	if got.Version != "1.0.0+2" || got.Catalog != "c" || len(got.Deprecations) != 1 || got.Deprecations[0] != "op.v1.0.0+2 is broken" {
		t.Errorf("resolved %+v", got)
	}
}

// What the API server refuses never reaches operator-controller.
func TestResolveV1RefusesWhatTheAPIServerRefuses(t *testing.T) {
	c := []simulate.V1Catalog{v1Catalog("c", 0, chain)}
	for _, tc := range []struct {
		req  simulate.V1Request
		want string
	}{
		{simulate.V1Request{}, `spec.source.catalog.packageName: Invalid value: "": Required value`},
		{simulate.V1Request{Package: "Op"}, `spec.source.catalog.packageName: Invalid value: "Op": packageName must be a valid DNS1123 subdomain`},
		{simulate.V1Request{Package: "op", Channels: []string{"stable", "Fast_1"}}, `spec.source.catalog.channels[1]: Invalid value: "Fast_1": channels entries must be valid DNS1123 subdomains`},
		{simulate.V1Request{Package: "op", Version: ">=1.0 <<2"}, `spec.source.catalog.version: Invalid value: ">=1.0 <<2": invalid version expression`},
		{simulate.V1Request{Package: "op", Version: strings.Repeat("1", 65)}, `Too long: may not be more than 64 bytes`},
		{simulate.V1Request{Package: "op", Policy: "Always"}, `spec.source.catalog.upgradeConstraintPolicy: Invalid value: "Always": Unsupported value`},
	} {
		_, err := resolveV1(c, tc.req)
		var se *simulate.V1SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "the API server refuses the ClusterExtension: ") {
			t.Errorf("%+v: error %v, want a V1SpecError with %q", tc.req, err, tc.want)
		}
	}
	if _, err := resolveV1([]simulate.V1Catalog{v1Catalog("c", 0, chain), v1Catalog("c", 1, chain)}, simulate.V1Request{Package: "op"}); err == nil || !strings.Contains(err.Error(), `two ClusterCatalogs are named "c"`) {
		t.Errorf("two catalogs of one name: error %v", err)
	}
}

// v1Route is a path as "1.0.0 -replaces-> 1.1.0", "- install-> 1.2.0" from nothing.
func v1Route(p *simulate.V1Path) string {
	short := func(n string) string { return n[strings.LastIndex(n, ".v")+2:] }
	out := "-"
	if p.Start != nil {
		out = short(p.Start.Name)
	}
	for _, s := range p.Steps {
		out += " -" + s.Edge + "-> " + short(s.To)
	}
	return out
}

func TestWalkV1(t *testing.T) {
	for _, tc := range []struct {
		name    string
		catalog pkg
		req     simulate.V1Request
		route   string
		result  simulate.Result
		why     string
	}{
		{"fresh install", chain, simulate.V1Request{}, "- -install-> 1.2.0", simulate.AtHead, ""},
		{"one hop at a time", chain, simulate.V1Request{Installed: installed("1.0.0")}, "1.0.0 -replaces-> 1.1.0 -replaces-> 1.2.0", simulate.AtHead, ""},
		{"a channel's latest", twoChannels, simulate.V1Request{Channels: []string{"stable"}, Installed: installed("1.0.0")}, "1.0.0 -replaces-> 1.1.0", simulate.AtHead, ""},
		{"every channel's edges", twoChannels, simulate.V1Request{Installed: installed("1.0.0")}, "1.0.0 -skipRange-> 2.0.0", simulate.AtHead, ""},
		{"stranded: nothing upgrades from it", pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0"}, {v: "1.2.0", replaces: "1.1.0"}}}}, simulate.V1Request{Installed: installed("1.0.0")},
			"1.0.0", simulate.Stranded, "no bundle of any channel replaces or skips op.v1.0.0, and no skipRange contains 1.0.0: operator-controller keeps op.v1.0.0 installed"},
		{"stranded: the successor is a pre-release out of range", pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}, {v: "1.1.0", replaces: "1.1.0-rc.1"}}}}, simulate.V1Request{Version: ">=1.0.0", Installed: installed("1.0.0")},
			"1.0.0", simulate.Stranded, `op.v1.1.0-rc.1: outside the version range ">=1.0.0"`},
		{"the pre-release on the way without a range", pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}, {v: "1.1.0", replaces: "1.1.0-rc.1"}}}}, simulate.V1Request{Installed: installed("1.0.0")},
			"1.0.0 -replaces-> 1.1.0-rc.1 -replaces-> 1.1.0", simulate.AtHead, ""},
		{"deprecated last: it stays below the deprecated latest version", pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0", skipRange: ">=1.0.0 <1.2.0"}}}, deprecated: []string{"1.2.0"}},
			simulate.V1Request{Installed: installed("1.0.0")}, "1.0.0 -replaces-> 1.1.0", simulate.AtHead, ""},
		{"SelfCertified: straight to the latest", chain, simulate.V1Request{Policy: simulate.SelfCertified, Installed: installed("1.0.0")}, "1.0.0 -SelfCertified-> 1.2.0", simulate.AtHead, ""},
		{"a dependency on the way", pkg{channels: chain.channels, depends: []string{"1.2.0"}}, simulate.V1Request{Installed: installed("1.0.0")},
			"1.0.0 -replaces-> 1.1.0", simulate.Unresolvable, `operator-controller cannot resolve the ClusterExtension (Progressing, Retrying): validating bundle "op.v1.2.0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := simulate.NewV1Resolver(v1Catalog("c", 0, tc.catalog))
			if err != nil {
				t.Fatal(err)
			}
			req := tc.req
			req.Package = "op"
			p, err := r.Walk(context.Background(), req, "c")
			if err != nil {
				t.Fatal(err)
			}
			if got := v1Route(p); got != tc.route || p.Result != tc.result || !strings.Contains(p.Why(), tc.why) || (tc.why == "") != (p.Why() == "") {
				t.Errorf("route %q, %s (%s); want %q, %s (%s)", got, p.Result, p.Why(), tc.route, tc.result, tc.why)
			}
		})
	}
}

// The walk ends when operator-controller resolves to what is installed, even through an edge of
// the bundle to itself.
func TestWalkV1StopsAtTheInstalledBundle(t *testing.T) {
	r, err := simulate.NewV1Resolver(v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0", replaces: "1.0.0"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Walk(context.Background(), simulate.V1Request{Package: "op", Installed: installed("1.0.0")}, "c")
	if err != nil || len(p.Steps) != 0 || p.Result != simulate.AtHead {
		t.Errorf("self-replacing bundle: %+v, %v: want it kept, at the latest", p, err)
	}
}

// An end-to-end cross-check asks from several goroutines at once.
func TestV1ResolverConcurrently(t *testing.T) {
	r, err := simulate.NewV1Resolver(v1Catalog("a", 0, twoChannels), v1Catalog("b", -1, chain))
	if err != nil {
		t.Fatal(err)
	}
	starts := []*simulate.V1Installed{nil, installed("1.0.0"), installed("1.1.0"), installed("1.2.0"), installed("2.0.0")}
	want := map[int]string{}
	for i, st := range starts {
		p, err := r.Walk(context.Background(), simulate.V1Request{Package: "op", Installed: st}, "a")
		if err != nil {
			t.Fatal(err)
		}
		want[i] = v1Route(p)
	}
	errs := make(chan string, len(starts)*8)
	for range 8 {
		for i, st := range starts {
			go func() {
				p, err := r.Walk(context.Background(), simulate.V1Request{Package: "op", Installed: st}, "a")
				switch {
				case err != nil:
					errs <- err.Error()
				case v1Route(p) != want[i]:
					errs <- "route " + v1Route(p) + ", alone " + want[i]
				default:
					errs <- ""
				}
			}()
		}
	}
	for range len(starts) * 8 {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

// resolveV1 is one reconcile over catalogs.
func resolveV1(catalogs []simulate.V1Catalog, req simulate.V1Request) (*simulate.V1Choice, error) {
	r, err := simulate.NewV1Resolver(catalogs...)
	if err != nil {
		return nil, err
	}
	return r.Resolve(req)
}
