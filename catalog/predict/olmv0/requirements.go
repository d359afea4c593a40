package olmv0

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	opregistry "github.com/operator-framework/operator-registry/pkg/registry"

	"github.com/csi-olm/csi-olm/internal/olmresolver"
)

// Provider is what meets a requirement of a running install: a bundle of the catalog the install
// came from or of one served beside it, installed as OLM installs a dependency, or, when none has
// one, an operator from another CatalogSource (Catalog is AnotherCatalog) that provides just what
// is required.
type Provider struct {
	// Requirement is what is required, in OLM's words.
	Requirement string `json:"requirement"`
	CSV         string `json:"csv"`
	Catalog     string `json:"catalog"`
}

// AnotherCatalog is the Catalog of a Provider no catalog given carries: a cluster that runs the
// install has it from a CatalogSource of its own (cert-manager from the Red Hat index, say).
const AnotherCatalog = "another catalog"

func (p Provider) String() string {
	if p.Catalog == AnotherCatalog {
		return fmt.Sprintf("an operator from another catalog, providing %s", p.Requirement)
	}
	return fmt.Sprintf("%s from %s, providing %s", p.CSV, p.Catalog, p.Requirement)
}

// requirement is one olm.gvk.required or olm.package.required of a bundle, as OLM's resolver
// reads it, and the operator that would provide exactly it.
type requirement struct {
	what    string
	pkg     string
	matches cache.Predicate
	// provider is an operator providing only what is required; ok is false when none can be
	// made (a version range no version literal of it satisfies).
	provider func() (olmresolver.Operator, bool)
}

// requirements reads the bundle's requirements OLM's resolver reads through its legacy
// properties. An olm.constraint is left to OLM: an install that needs one is simulated as is.
func requirements(props []*api.Property) []requirement {
	var out []requirement
	for _, p := range props {
		switch p.Type {
		case property.TypeGVKRequired:
			var g property.GVKRequired
			if json.Unmarshal([]byte(p.Value), &g) != nil {
				continue
			}
			pred := cache.ProvidingAPIPredicate(opregistry.APIKey{Group: g.Group, Version: g.Version, Kind: g.Kind})
			out = append(out, requirement{what: strings.TrimPrefix(pred.String(), "providing "), matches: pred,
				provider: func() (olmresolver.Operator, bool) { return apiProvider(g.Group, g.Version, g.Kind), true }})
		case property.TypePackageRequired:
			var r property.PackageRequired
			if json.Unmarshal([]byte(p.Value), &r) != nil {
				continue
			}
			rng, err := semver.ParseRange(r.VersionRange)
			if err != nil {
				continue
			}
			out = append(out, requirement{
				what:    fmt.Sprintf("package %s in range %s", r.PackageName, r.VersionRange),
				pkg:     r.PackageName,
				matches: cache.And(cache.PkgPredicate(r.PackageName), cache.VersionInRangePredicate(rng, r.VersionRange)),
				provider: func() (olmresolver.Operator, bool) {
					v, ok := versionIn(rng, r.VersionRange)
					return packageProvider(r.PackageName, v), ok
				},
			})
		}
	}
	return out
}

// apiProvider is an installed operator that provides one API and nothing else.
func apiProvider(group, version, kind string) olmresolver.Operator {
	prop := property.MustBuildGVK(group, version, kind)
	return olmresolver.Operator{
		CSV:        strings.ToLower(fmt.Sprintf("provides-%s.%s.%s", kind, version, group)),
		Properties: []*api.Property{{Type: prop.Type, Value: string(prop.Value)}},
	}
}

// packageProvider is an installed operator of a package at a version, with nothing else known
// of it.
func packageProvider(pkg string, v semver.Version) olmresolver.Operator {
	prop := property.MustBuildPackage(pkg, v.String())
	return olmresolver.Operator{CSV: pkg + ".v" + v.String(), Version: v, Properties: []*api.Property{{Type: prop.Type, Value: string(prop.Value)}}}
}

var versionLiteral = regexp.MustCompile(`\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?`)

// versionIn is a version the range holds: one it names, or 0.0.0.
func versionIn(rng semver.Range, raw string) (semver.Version, bool) {
	for _, lit := range append(versionLiteral.FindAllString(raw, -1), "0.0.0") {
		if v, err := semver.Parse(lit); err == nil && rng(v) {
			return v, true
		}
	}
	return semver.Version{}, false
}

func (o operator) meets(r requirement) bool {
	return r.matches.Test(&cache.Entry{Name: o.CSV, Version: &o.Version, Properties: o.Properties})
}

// meetRequirements adds to the namespace a provider of each requirement of its operators that
// none of them meets, the providers' own requirements included: a running install has what it
// requires, as OLM installed it with it. A provider is the newest bundle that meets the
// requirement in the catalog the install came from, or else in a catalog served beside target,
// installed as OLM installs a dependency: subscribed to its channel in the CatalogSource that
// serves it now. When no catalog has one, it is an operator from another catalog.
func (s *Simulator) meetRequirements(from, target string, ns []operator) ([]operator, []Provider, error) {
	hidden := s.versionsBeside(target)
	search := []string{from}
	for _, name := range slices.Sorted(maps.Keys(s.catalogs)) {
		if name != from && !slices.Contains(hidden, name) {
			search = append(search, name)
		}
	}
	var providers []Provider
	for i := 0; i < len(ns); i++ {
		for _, r := range requirements(ns[i].Properties) {
			if slices.ContainsFunc(ns, func(o operator) bool { return o.meets(r) }) {
				continue
			}
			best, in, err := s.newestMeeting(search, r)
			if err != nil {
				return nil, nil, err
			}
			if best == nil {
				op, ok := r.provider()
				if !ok {
					continue
				}
				ns = append(ns, newOperator(op, AnotherCatalog))
				providers = append(providers, Provider{Requirement: r.what, CSV: op.CSV, Catalog: AnotherCatalog})
				continue
			}
			op := olmresolver.Operator{CSV: best.Name, Version: *best.Version, Properties: best.Properties}
			// A catalog hidden beside target is an earlier version of target's CatalogSource.
			serves := in
			if slices.Contains(hidden, in) {
				serves = target
			}
			pkg, channel := best.Package(), best.Channel()
			if c := s.catalogs[serves]; c != nil && c.idx.Channel(pkg, channel) != nil {
				op.Subscription = &olmresolver.Subscription{Name: pkg, Package: pkg, Channel: channel, Catalog: serves}
			}
			ns = append(ns, newOperator(op, in))
			providers = append(providers, Provider{Requirement: r.what, CSV: best.Name, Catalog: in})
		}
	}
	return ns, providers, nil
}

// newestMeeting is the newest bundle that meets r in the first of the catalogs that has one. The
// answer holds for every start with the same catalogs: it is asked once.
func (s *Simulator) newestMeeting(catalogs []string, r requirement) (*cache.Entry, string, error) {
	key := strings.Join(catalogs, ",") + "|" + r.what
	s.mu.Lock()
	m, ok := s.providers[key]
	s.mu.Unlock()
	if ok {
		return m.entry, m.catalog, nil
	}
	e, c, err := s.findNewestMeeting(catalogs, r)
	if err == nil {
		s.mu.Lock()
		s.providers[key] = meeting{e, c}
		s.mu.Unlock()
	}
	return e, c, err
}

// meeting is a provider found: the bundle and its catalog, nil when none has one.
type meeting struct {
	entry   *cache.Entry
	catalog string
}

func (s *Simulator) findNewestMeeting(catalogs []string, r requirement) (*cache.Entry, string, error) {
	for _, c := range catalogs {
		entries, err := s.resolver.Find(c, r.pkg, r.matches)
		if err != nil {
			return nil, "", fmt.Errorf("reading catalog %s: %w", s.catalogs[c].Dir, err)
		}
		var best *cache.Entry
		for _, e := range entries {
			if e.Version != nil && (best == nil || best.Version.LT(*e.Version)) {
				best = e
			}
		}
		if best != nil {
			return best, c, nil
		}
	}
	return nil, "", nil
}
