package olmv1_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv1"
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
func v1Catalog(catalog string, priority int32, p pkg) olmv1.Catalog {
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
	return olmv1.Catalog{Name: catalog, Priority: priority, Config: cfg}
}

func installed(v string) *olmv1.Installed {
	return &olmv1.Installed{Name: opName(v), Version: v}
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
		catalogs []olmv1.Catalog
		req      olmv1.Request
		want     string // the bundle, @catalog when it matters
		err      string
	}{
		{name: "fresh: the highest version", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{}, want: opName("1.2.0")},
		{name: "fresh: in the version range", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Version: "<1.2.0"}, want: opName("1.1.0")},
		{name: "fresh: a pinned wildcard", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Version: "1.0.x"}, want: opName("1.0.0")},
		{name: "fresh: nothing in range", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Version: ">=3.0.0", Channels: []string{"stable"}},
			err: `no bundles found for package "op" matching version ">=3.0.0" in channels [stable]`},
		{name: "fresh: in a channel", catalogs: []olmv1.Catalog{v1Catalog("c", 0, twoChannels)}, req: olmv1.Request{Channels: []string{"stable"}}, want: opName("1.1.0")},
		{name: "fresh: every channel when none is named", catalogs: []olmv1.Catalog{v1Catalog("c", 0, twoChannels)}, req: olmv1.Request{}, want: opName("2.0.0")},
		{name: "fresh: a channel the package lacks", catalogs: []olmv1.Catalog{v1Catalog("c", 0, twoChannels)}, req: olmv1.Request{Channels: []string{"beta"}},
			err: `no bundles found for package "op" in channels [beta]`},
		{name: "fresh: deprecated last", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: chain.channels, deprecated: []string{"1.2.0"}})}, want: opName("1.1.0")},
		{name: "fresh: deprecated when nothing else is left", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: chain.channels, deprecated: []string{"1.0.0", "1.1.0", "1.2.0"}})}, want: opName("1.2.0")},
		{name: "fresh: a package no catalog has", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Package: "other"},
			err: `no bundles found for package "other"`},

		{name: "pre-release: the highest, when no range is given", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}}}})}, want: opName("1.1.0-rc.1")},
		{name: "pre-release: not in a range that names none", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}}}})}, req: olmv1.Request{Version: ">=1.0.0"}, want: opName("1.0.0")},
		{name: "pre-release: in a range that names one", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}}}})}, req: olmv1.Request{Version: ">=1.0.0-0"}, want: opName("1.1.0-rc.1")},
		{name: "pre-release: rc.10 above rc.9", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "0.2.2-rc.9"}, {v: "0.2.2-rc.10", replaces: "0.2.2-rc.9"}}}})}, want: opName("0.2.2-rc.10")},

		{name: "upgrade: one replaces hop", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Installed: installed("1.0.0")}, want: opName("1.1.0")},
		{name: "upgrade: the head stays", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Installed: installed("1.2.0")}, want: opName("1.2.0")},
		{name: "upgrade: skips", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0", skips: []string{"1.0.0"}}}}})},
			req: olmv1.Request{Installed: installed("1.0.0")}, want: opName("1.2.0")},
		{name: "upgrade: skipRange over replaces, the highest wins", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0", skipRange: ">=1.0.0 <1.2.0"}}}})},
			req: olmv1.Request{Installed: installed("1.0.0")}, want: opName("1.2.0")},
		// Unlike OLM v0, a bundle that another skips is a target like any other.
		{name: "upgrade: a skipped bundle is a candidate", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.0.0", skips: []string{"1.1.0"}}}}})},
			req: olmv1.Request{Installed: installed("1.1.0")}, want: opName("1.2.0")},
		{name: "upgrade: the edge must be in a named channel", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.2.0"}}, "fast": {{v: "1.0.0"}, {v: "1.2.0", replaces: "1.0.0"}}}})},
			req: olmv1.Request{Channels: []string{"stable"}, Installed: installed("1.0.0")}, want: opName("1.0.0")},
		{name: "upgrade: the edge of any channel when none is named", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.2.0"}}, "fast": {{v: "1.0.0"}, {v: "1.2.0", replaces: "1.0.0"}}}})},
			req: olmv1.Request{Installed: installed("1.0.0")}, want: opName("1.2.0")},
		{name: "upgrade: deprecated last, even below the installed version", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0", skipRange: ">=1.0.0 <1.2.0"}}}, deprecated: []string{"1.2.0"}})},
			req: olmv1.Request{Installed: installed("1.0.0")}, want: opName("1.1.0")},
		{name: "upgrade: a bundle from elsewhere, nothing upgrades from it", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Installed: &olmv1.Installed{Name: "community.v0.5.0", Version: "0.5.0"}},
			err: `error upgrading from currently installed version "0.5.0": no bundles found for package "op"`},
		{name: "upgrade: the installed version out of range, no successor in it", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Version: "<1.1.0", Installed: installed("1.2.0")},
			err: `error upgrading from currently installed version "1.2.0": no bundles found for package "op" matching version "<1.1.0"`},
		{name: "upgrade: an installed version that is not semver", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Installed: &olmv1.Installed{Name: "op.v1", Version: "1"}},
			err: `error walking catalogs: error finding upgrade edges: failed to get version and release of installed bundle: No Major.Minor.Patch elements found`},
		{name: "upgrade: a release in the build metadata", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0+1"}, {v: "1.0.0+2", replaces: "1.0.0+1"}}}})},
			req: olmv1.Request{Installed: &olmv1.Installed{Name: opName("1.0.0+1"), Version: "1.0.0+1"}}, want: opName("1.0.0+2")},

		{name: "SelfCertified: any version in range, a downgrade included", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Policy: olmv1.SelfCertified, Version: "<1.2.0", Installed: installed("1.2.0")}, want: opName("1.1.0")},
		{name: "SelfCertified: no edge needed", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "2.0.0"}}}})}, req: olmv1.Request{Policy: olmv1.SelfCertified, Installed: installed("1.0.0")}, want: opName("2.0.0")},
		{name: "CatalogProvided: no edge, no move", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "2.0.0"}}}})}, req: olmv1.Request{Policy: olmv1.CatalogProvided, Installed: installed("1.0.0")}, want: opName("1.0.0")},

		{name: "catalogs: equal priority is ambiguous", catalogs: []olmv1.Catalog{v1Catalog("b", 0, chain), v1Catalog("a", 0, chain)},
			err: `found bundles for package "op" in multiple catalogs with the same priority [a b]`},
		{name: "catalogs: ambiguous on upgrade", catalogs: []olmv1.Catalog{v1Catalog("a", 0, chain), v1Catalog("b", 0, chain)}, req: olmv1.Request{Installed: installed("1.0.0"), Channels: []string{"stable"}},
			err: `error upgrading from currently installed version "1.0.0": found bundles for package "op" in channels [stable] in multiple catalogs with the same priority [a b]`},
		{name: "catalogs: the highest priority wins, a lower version", catalogs: []olmv1.Catalog{v1Catalog("a", 0, chain), v1Catalog("b", 5, pkg{channels: map[string][]entry{"stable": {{v: "0.9.0"}}}})}, want: opName("0.9.0") + "@b"},
		{name: "catalogs: a catalog whose best is deprecated loses, whatever its priority", catalogs: []olmv1.Catalog{v1Catalog("a", 10, pkg{channels: chain.channels, deprecated: []string{"1.0.0", "1.1.0", "1.2.0"}}), v1Catalog("b", 0, pkg{channels: map[string][]entry{"stable": {{v: "0.9.0"}}}})},
			want: opName("0.9.0") + "@b"},
		// operator-controller names every catalog still in the running, the lower one too.
		{name: "catalogs: a tie at the top lists every catalog", catalogs: []olmv1.Catalog{v1Catalog("a", 1, chain), v1Catalog("b", 1, chain), v1Catalog("c", 0, chain)},
			err: `found bundles for package "op" in multiple catalogs with the same priority [a b c]`},
		{name: "catalogs: one without the package does not count", catalogs: []olmv1.Catalog{v1Catalog("a", 0, chain), {Name: "b", Config: &declcfg.DeclarativeConfig{}}}, want: opName("1.2.0") + "@a"},

		{name: "a dependency refuses the chosen bundle", catalogs: []olmv1.Catalog{v1Catalog("c", 0, pkg{channels: chain.channels, depends: []string{"1.2.0"}})},
			err: `validating bundle "op.v1.2.0": bundle "op.v1.2.0" has a dependency declared via property "olm.package.required" which is currently not supported`},
		{name: "a version range the controller cannot parse", catalogs: []olmv1.Catalog{v1Catalog("c", 0, chain)}, req: olmv1.Request{Version: "1.2.3-01"},
			err: `desired version range "1.2.3-01" is invalid: constraint parser error`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Package == "" {
				req.Package = "op"
			}
			got, err := resolveV1(tc.catalogs, req)
			if tc.err != "" {
				var re *olmv1.ResolutionError
				if err == nil || err.Error() != tc.err || !errors.As(err, &re) {
					t.Fatalf("resolved %+v, error %v: want a ResolutionError %q", got, err, tc.err)
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
	got, err := resolveV1([]olmv1.Catalog{c}, olmv1.Request{Package: "op"})
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
	c := []olmv1.Catalog{v1Catalog("c", 0, chain)}
	for _, tc := range []struct {
		req  olmv1.Request
		want string
	}{
		{olmv1.Request{}, `spec.source.catalog.packageName: Invalid value: "": Required value`},
		{olmv1.Request{Package: "Op"}, `spec.source.catalog.packageName: Invalid value: "Op": packageName must be a valid DNS1123 subdomain`},
		{olmv1.Request{Package: "op", Channels: []string{"stable", "Fast_1"}}, `spec.source.catalog.channels[1]: Invalid value: "Fast_1": channels entries must be valid DNS1123 subdomains`},
		{olmv1.Request{Package: "op", Version: ">=1.0 <<2"}, `spec.source.catalog.version: Invalid value: ">=1.0 <<2": invalid version expression`},
		{olmv1.Request{Package: "op", Version: strings.Repeat("1", 65)}, `Too long: may not be more than 64 bytes`},
		{olmv1.Request{Package: "op", Policy: "Always"}, `spec.source.catalog.upgradeConstraintPolicy: Invalid value: "Always": Unsupported value`},
	} {
		_, err := resolveV1(c, tc.req)
		var se *olmv1.SpecError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "the API server refuses the ClusterExtension: ") {
			t.Errorf("%+v: error %v, want a SpecError with %q", tc.req, err, tc.want)
		}
	}
	if _, err := resolveV1([]olmv1.Catalog{v1Catalog("c", 0, chain), v1Catalog("c", 1, chain)}, olmv1.Request{Package: "op"}); err == nil || !strings.Contains(err.Error(), `two ClusterCatalogs are named "c"`) {
		t.Errorf("two catalogs of one name: error %v", err)
	}
}

// v1Route is a path as "1.0.0 -replaces-> 1.1.0", "- install-> 1.2.0" from nothing.
func v1Route(p *olmv1.Path) string {
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
		req     olmv1.Request
		route   string
		result  predict.Result
		why     string
	}{
		{"fresh install", chain, olmv1.Request{}, "- -install-> 1.2.0", predict.AtHead, ""},
		{"one hop at a time", chain, olmv1.Request{Installed: installed("1.0.0")}, "1.0.0 -replaces-> 1.1.0 -replaces-> 1.2.0", predict.AtHead, ""},
		{"a channel's latest", twoChannels, olmv1.Request{Channels: []string{"stable"}, Installed: installed("1.0.0")}, "1.0.0 -replaces-> 1.1.0", predict.AtHead, ""},
		{"every channel's edges", twoChannels, olmv1.Request{Installed: installed("1.0.0")}, "1.0.0 -skipRange-> 2.0.0", predict.AtHead, ""},
		{"stranded: nothing upgrades from it", pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0"}, {v: "1.2.0", replaces: "1.1.0"}}}}, olmv1.Request{Installed: installed("1.0.0")},
			"1.0.0", predict.Stranded, "no bundle of any channel replaces or skips op.v1.0.0, and no skipRange contains 1.0.0: operator-controller keeps op.v1.0.0 installed"},
		{"stranded: the successor is a pre-release out of range", pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}, {v: "1.1.0", replaces: "1.1.0-rc.1"}}}}, olmv1.Request{Version: ">=1.0.0", Installed: installed("1.0.0")},
			"1.0.0", predict.Stranded, `op.v1.1.0-rc.1: outside the version range ">=1.0.0"`},
		{"the pre-release on the way without a range", pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0-rc.1", replaces: "1.0.0"}, {v: "1.1.0", replaces: "1.1.0-rc.1"}}}}, olmv1.Request{Installed: installed("1.0.0")},
			"1.0.0 -replaces-> 1.1.0-rc.1 -replaces-> 1.1.0", predict.AtHead, ""},
		{"deprecated last: it stays below the deprecated latest version", pkg{channels: map[string][]entry{"stable": {{v: "1.0.0"}, {v: "1.1.0", replaces: "1.0.0"}, {v: "1.2.0", replaces: "1.1.0", skipRange: ">=1.0.0 <1.2.0"}}}, deprecated: []string{"1.2.0"}},
			olmv1.Request{Installed: installed("1.0.0")}, "1.0.0 -replaces-> 1.1.0", predict.AtHead, ""},
		{"SelfCertified: straight to the latest", chain, olmv1.Request{Policy: olmv1.SelfCertified, Installed: installed("1.0.0")}, "1.0.0 -SelfCertified-> 1.2.0", predict.AtHead, ""},
		{"a dependency on the way", pkg{channels: chain.channels, depends: []string{"1.2.0"}}, olmv1.Request{Installed: installed("1.0.0")},
			"1.0.0 -replaces-> 1.1.0", predict.Unresolvable, `operator-controller cannot resolve the ClusterExtension (Progressing, Retrying): validating bundle "op.v1.2.0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := olmv1.NewResolver(v1Catalog("c", 0, tc.catalog))
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
	r, err := olmv1.NewResolver(v1Catalog("c", 0, pkg{channels: map[string][]entry{"stable": {{v: "1.0.0", replaces: "1.0.0"}}}}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Walk(context.Background(), olmv1.Request{Package: "op", Installed: installed("1.0.0")}, "c")
	if err != nil || len(p.Steps) != 0 || p.Result != predict.AtHead {
		t.Errorf("self-replacing bundle: %+v, %v: want it kept, at the latest", p, err)
	}
}

// An end-to-end cross-check asks from several goroutines at once.
func TestV1ResolverConcurrently(t *testing.T) {
	r, err := olmv1.NewResolver(v1Catalog("a", 0, twoChannels), v1Catalog("b", -1, chain))
	if err != nil {
		t.Fatal(err)
	}
	starts := []*olmv1.Installed{nil, installed("1.0.0"), installed("1.1.0"), installed("1.2.0"), installed("2.0.0")}
	want := map[int]string{}
	for i, st := range starts {
		p, err := r.Walk(context.Background(), olmv1.Request{Package: "op", Installed: st}, "a")
		if err != nil {
			t.Fatal(err)
		}
		want[i] = v1Route(p)
	}
	errs := make(chan string, len(starts)*8)
	for range 8 {
		for i, st := range starts {
			go func() {
				p, err := r.Walk(context.Background(), olmv1.Request{Package: "op", Installed: st}, "a")
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
func resolveV1(catalogs []olmv1.Catalog, req olmv1.Request) (*olmv1.Choice, error) {
	r, err := olmv1.NewResolver(catalogs...)
	if err != nil {
		return nil, err
	}
	return r.Resolve(req)
}
