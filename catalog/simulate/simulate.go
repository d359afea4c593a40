// Package simulate is the `csi-olm catalog simulate` verb: it predicts, offline, the bundles OLM
// installs one after the other from an installed CSV up to its channel's head.
//
// Where the rules come from:
//   - Which bundle OLM installs next is decided by OLM's own resolver (operator-lifecycle-manager
//     pkg/controller/registry/resolver, v0.46.0, the OLM the test bed runs): its candidates are
//     the channel's bundles whose replaces or skips names the installed CSV or whose skipRange
//     contains its version, ordered from the channel head down, and its SAT solver takes the first
//     it can install (deprecated-by-property bundles and unsatisfiable dependencies are refused).
//   - The catalogs reach that resolver through operator-registry's cache and RegistryServer, the
//     code `opm serve` runs, so replaces, skips, skipRange and deprecations are read as a cluster
//     reads them.
//   - The explanations of why a candidate was passed over restate two rules of the resolver:
//     sortChannel leaves bundles that another bundle skips out of the channel order, and the
//     candidate nearest the head wins (channelOrder, below).
//   - The edge a step takes is named by internal/upgrade, the project's statement of OLM's edge
//     rule.
//
// A test on the test bed (test/e2e, TestSimulateMatchesOLM) installs every start of the project's
// catalogs and of the synthetic ones with real OLM and checks OLM takes the predicted path.
package simulate

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/api"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// Catalog is a file-based catalog to simulate against, served under Name (the CatalogSource
// name a Subscription would use).
type Catalog struct {
	Name string
	Dir  string
	FS   fs.FS
}

// Start is an installed CSV and the Subscription that would move it.
type Start struct {
	// CSV is the installed ClusterServiceVersion's name.
	CSV string `json:"csv"`
	// Package is the Subscription's package; empty takes the package the CSV belongs to.
	Package string `json:"package,omitempty"`
	// Channel is the Subscription's channel; empty takes the package's default channel.
	Channel string `json:"channel,omitempty"`
	// InstalledFrom is the catalog the CSV came from when it is not the target catalog: the
	// community -> certified source switch.
	InstalledFrom string `json:"installedFrom,omitempty"`
	// Subscription is namespace/name of the cluster's Subscription, for --from-cluster.
	Subscription string `json:"subscription,omitempty"`
	// Installed is the CSV as a cluster holds it; nil reads it from the catalog it came from.
	Installed *Installed `json:"-"`
}

// Path is what OLM does from a Start: each bundle it installs, in order.
type Path struct {
	Subscription string `json:"subscription,omitempty"`
	Catalog      string `json:"catalog"`
	Package      string `json:"package"`
	Channel      string `json:"channel"`
	Start        Bundle `json:"start"`
	Steps        []Step `json:"steps"`
	// End is the CSV OLM settles on; Head the channel's head.
	End  string `json:"end"`
	Head string `json:"head"`
	// Stranded says why OLM stops short of the head; empty when it reaches it.
	Stranded string `json:"stranded,omitempty"`
}

// Bundle is a CSV and the catalog it comes from.
type Bundle struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Catalog string `json:"catalog"`
}

// Step is one upgrade OLM performs.
type Step struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Version string `json:"version"`
	// Edge is the field of To's channel entry that lets it replace From; Edges every such field.
	Edge  upgrade.Kind   `json:"edge"`
	Edges []upgrade.Kind `json:"edges"`
	// SkipRange is To's skipRange, when it is what matched.
	SkipRange string `json:"skipRange,omitempty"`
	// Passed are the other candidates, and why OLM did not choose them.
	Passed []Passed `json:"passed,omitempty"`
	// Deprecations are the catalog's deprecation notices that apply once To is installed, which
	// OLM shows on the Subscription.
	Deprecations []string `json:"deprecations,omitempty"`
}

// Passed is a candidate OLM did not choose.
type Passed struct {
	Bundle  string       `json:"bundle"`
	Version string       `json:"version"`
	Edge    upgrade.Kind `json:"edge"`
	Why     string       `json:"why"`
}

// Simulator holds the catalogs, served in-process, and OLM's resolver over them. It is safe for
// concurrent use: simulations take turns, as the resolver's installed CSV is one.
type Simulator struct {
	mu       sync.Mutex
	olm      *olmResolver
	catalogs map[string]*loaded
	order    []string
	close    []func()
}

type loaded struct {
	Catalog
	cfg *declcfg.DeclarativeConfig
}

// New loads and serves the catalogs. A catalog with load problems is refused with every problem,
// as `csi-olm catalog validate` reports them.
func New(ctx context.Context, catalogs ...Catalog) (*Simulator, error) {
	s := &Simulator{catalogs: map[string]*loaded{}}
	clients := map[string]registryclient.Interface{}
	for _, c := range catalogs {
		if _, dup := s.catalogs[c.Name]; dup {
			s.Close()
			return nil, fmt.Errorf("two catalogs are named %q: name them apart", c.Name)
		}
		v, problems := validation.Load(ctx, c.FS, c.Dir)
		if len(problems) > 0 {
			s.Close()
			return nil, fmt.Errorf("cannot simulate %s:\n%s", c.Dir, problemLines(problems))
		}
		srv, err := serve(ctx, c.FS)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("serving %s: %w", c.Dir, err)
		}
		s.close = append(s.close, srv.close)
		s.catalogs[c.Name] = &loaded{Catalog: c, cfg: v.Config}
		s.order = append(s.order, c.Name)
		clients[c.Name] = srv.client
	}
	olm, err := newOLMResolver(clients)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.olm = olm
	return s, nil
}

// Close stops the in-process registries.
func (s *Simulator) Close() {
	for _, c := range s.close {
		c()
	}
	s.close = nil
}

func problemLines(problems []validation.Problem) string {
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Starts lists every start a catalog offers: each bundle of each channel of each package, as a
// Subscription to that channel starting at that bundle.
func (s *Simulator) Starts(catalog string) []Start {
	c := s.catalogs[catalog]
	if c == nil {
		return nil
	}
	var out []Start
	for _, ch := range c.cfg.Channels {
		for _, e := range ch.Entries {
			out = append(out, Start{CSV: e.Name, Package: ch.Package, Channel: ch.Name})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		if a.Channel != b.Channel {
			return a.Channel < b.Channel
		}
		return c.version(a.Package, a.CSV).LT(c.version(b.Package, b.CSV))
	})
	return out
}

// Simulate predicts the path OLM takes from start in catalog target.
func (s *Simulator) Simulate(ctx context.Context, target string, start Start) (*Path, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tc := s.catalogs[target]
	if tc == nil {
		return nil, fmt.Errorf("no catalog named %q", target)
	}
	from := target
	if start.InstalledFrom != "" {
		from = start.InstalledFrom
	}
	fc := s.catalogs[from]
	if fc == nil {
		return nil, fmt.Errorf("no catalog named %q", from)
	}
	var err error
	pkg := start.Package
	if pkg == "" {
		pkgs := fc.packagesOf(start.CSV)
		switch len(pkgs) {
		case 0:
			return nil, fmt.Errorf("CSV %q is not in catalog %s: name the catalog it was installed from (--installed-from)", start.CSV, fc.Dir)
		case 1:
			pkg = pkgs[0]
		default:
			return nil, fmt.Errorf("CSV %q is in packages %s of %s: name one with --package", start.CSV, strings.Join(pkgs, ", "), fc.Dir)
		}
	}
	p := tc.pkg(pkg)
	if p == nil {
		return nil, fmt.Errorf("package %q is not in catalog %s", pkg, tc.Dir)
	}
	channel := start.Channel
	if channel == "" {
		channel = p.DefaultChannel
	}
	ch := tc.channel(pkg, channel)
	if ch == nil {
		return nil, fmt.Errorf("package %q of catalog %s has no channel %q (channels: %s)", pkg, tc.Dir, channel, strings.Join(tc.channelNames(pkg), ", "))
	}
	var installed *cache.Entry
	if start.Installed != nil {
		from = "cluster"
		installed = &cache.Entry{Name: start.CSV, Version: &start.Installed.Version, Properties: start.Installed.Properties}
	} else if installed, err = s.installedEntry(from, pkg, start.CSV); err != nil {
		return nil, err
	}
	path := &Path{
		Subscription: start.Subscription, Catalog: target, Package: pkg, Channel: channel,
		Start: Bundle{Name: start.CSV, Version: installed.Version.String(), Catalog: from},
		Head:  validation.Head(ch),
	}
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: pkg, Namespace: subscriptionNamespace},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource: target, CatalogSourceNamespace: catalogNamespace,
			Package: pkg, Channel: channel, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
		},
	}
	seen := map[string]bool{start.CSV: true}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sub.Status.InstalledCSV = installed.Name
		installed.SourceInfo = &cache.OperatorSourceInfo{Package: pkg, Catalog: cache.NewVirtualSourceKey(subscriptionNamespace), Subscription: sub}
		next, err := s.olm.next(sub, installed)
		if err != nil {
			return nil, fmt.Errorf("OLM cannot resolve %s from %s in channel %q of %s: %w", pkg, installed.Name, channel, target, err)
		}
		if next == nil {
			break
		}
		if seen[next.Name] {
			return nil, fmt.Errorf("OLM would install %s again after %s: the channel's edges loop", next.Name, installed.Name)
		}
		seen[next.Name] = true
		path.Steps = append(path.Steps, s.step(tc, ch, installed, next))
		installed = copyAsInstalled(next)
	}
	path.End = installed.Name
	if path.End != path.Head {
		path.Stranded = s.stranded(tc, ch, installed)
	}
	return path, nil
}

// installedEntry is the installed CSV as OLM's csvSource sees it: its name, version and the
// properties OLM projected onto it from the bundle it installed.
func (s *Simulator) installedEntry(catalog, pkg, csv string) (*cache.Entry, error) {
	entries := s.olm.find(catalog, cache.PkgPredicate(pkg), cache.CSVNamePredicate(csv))
	if err := s.olm.cache.Namespaced(subscriptionNamespace, catalogNamespace).Error(); err != nil {
		return nil, fmt.Errorf("reading catalog %s: %w", catalog, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("CSV %q of package %q is not in catalog %s: name the catalog it was installed from (--installed-from)", csv, pkg, s.catalogs[catalog].Dir)
	}
	if entries[0].Version == nil {
		return nil, fmt.Errorf("CSV %q in catalog %s has no version", csv, s.catalogs[catalog].Dir)
	}
	return copyAsInstalled(entries[0]), nil
}

func copyAsInstalled(e *cache.Entry) *cache.Entry {
	return &cache.Entry{Name: e.Name, Version: e.Version, Properties: e.Properties, ProvidedAPIs: e.ProvidedAPIs, RequiredAPIs: e.RequiredAPIs}
}

// step describes the upgrade from installed to next: the edge, the candidates passed over, the
// deprecations.
func (s *Simulator) step(tc *loaded, ch *declcfg.Channel, installed, next *cache.Entry) Step {
	st := Step{From: installed.Name, To: next.Name, Version: next.Version.String()}
	rule := tc.rule(ch, next.Name)
	st.Edges = rule.Kinds(installed.Name, installed.Version)
	if len(st.Edges) > 0 {
		st.Edge = st.Edges[0]
	}
	if st.Edge == upgrade.SkipRange {
		st.SkipRange = rule.SkipRange
	}
	// The resolver's result carries no deprecations: OLM's subscription reconciler reads them
	// from the catalog's entry, and so does this.
	for _, e := range s.olm.find(tc.Name, cache.CSVNamePredicate(next.Name), cache.ChannelPredicate(ch.Name)) {
		if d := e.SourceInfo.Deprecations; d != nil {
			for _, m := range []*api.Deprecation{d.Package, d.Channel, d.Bundle} {
				if m != nil {
					st.Deprecations = append(st.Deprecations, m.GetMessage())
				}
			}
		}
	}
	order := channelOrder(ch)
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	skippedBy := skippers(ch)
	for _, cand := range s.candidates(tc, ch, installed) {
		if cand.Name == next.Name {
			continue
		}
		p := Passed{Bundle: cand.Name, Version: cand.Version.String()}
		p.Edge, _ = tc.rule(ch, cand.Name).From(installed.Name, installed.Version)
		switch {
		case len(skippedBy[cand.Name]) > 0:
			p.Why = fmt.Sprintf("skipped by %s: OLM leaves skipped bundles out of the channel order, so it never upgrades to one", strings.Join(skippedBy[cand.Name], ", "))
		case rank(cand.Name) > rank(next.Name):
			p.Why = fmt.Sprintf("further from the head than %s: OLM prefers the candidate nearest the channel head", next.Name)
		default:
			p.Why = "nearer the head, but OLM's resolver cannot install it (a deprecated property, a missing dependency or a conflict)"
		}
		st.Passed = append(st.Passed, p)
	}
	return st
}

// candidates are the channel's bundles OLM's resolver considers as replacements for installed:
// its own predicate (resolver.getSubscriptionVariables), before channel ordering drops skipped
// ones.
func (s *Simulator) candidates(tc *loaded, ch *declcfg.Channel, installed *cache.Entry) []*cache.Entry {
	return s.olm.find(tc.Name, cache.PkgPredicate(ch.Package), cache.ChannelPredicate(ch.Name),
		cache.Not(cache.CSVNamePredicate(installed.Name)),
		cache.Or(cache.SkipRangeIncludesPredicate(*installed.Version), cache.ReplacesPredicate(installed.Name)))
}

// stranded says why OLM keeps end although it is not the head.
func (s *Simulator) stranded(tc *loaded, ch *declcfg.Channel, end *cache.Entry) string {
	cands := s.candidates(tc, ch, end)
	if len(cands) == 0 {
		return fmt.Sprintf("no bundle of channel %q replaces or skips %s, and no skipRange contains %s: OLM keeps %s installed", ch.Name, end.Name, end.Version, end.Name)
	}
	skippedBy := skippers(ch)
	var names []string
	for _, c := range cands {
		names = append(names, c.Name)
		if len(skippedBy[c.Name]) == 0 {
			return fmt.Sprintf("OLM's resolver cannot install %s, which can replace %s (a deprecated property, a missing dependency or a conflict)", c.Name, end.Name)
		}
	}
	return fmt.Sprintf("the only bundles that replace %s (%s) are skipped by others, and OLM never upgrades to a skipped bundle: OLM keeps %s installed", end.Name, strings.Join(names, ", "), end.Name)
}

// channelOrder restates OLM's resolver.sortChannel: from the head down the replaces chain,
// leaving out every bundle another bundle of the channel skips. OLM prefers candidates in this
// order. The catalog loaded without problems, so the channel has one head and no loop.
func channelOrder(ch *declcfg.Channel) []string {
	replaces := map[string]string{}
	for _, e := range ch.Entries {
		replaces[e.Name] = e.Replaces
	}
	skipped := skippers(ch)
	var order []string
	seen := map[string]bool{}
	for name := validation.Head(ch); name != "" && !seen[name]; name = replaces[name] {
		seen[name] = true
		if _, inChannel := replaces[name]; !inChannel {
			break
		}
		if len(skipped[name]) == 0 {
			order = append(order, name)
		}
	}
	return order
}

// skippers maps each bundle of the channel to the channel's bundles that skip it.
func skippers(ch *declcfg.Channel) map[string][]string {
	out := map[string][]string{}
	for _, e := range ch.Entries {
		for _, s := range e.Skips {
			out[s] = append(out[s], e.Name)
		}
	}
	return out
}

func (c *loaded) pkg(name string) *declcfg.Package {
	for i := range c.cfg.Packages {
		if c.cfg.Packages[i].Name == name {
			return &c.cfg.Packages[i]
		}
	}
	return nil
}

func (c *loaded) channel(pkg, name string) *declcfg.Channel {
	for i := range c.cfg.Channels {
		if ch := &c.cfg.Channels[i]; ch.Package == pkg && ch.Name == name {
			return ch
		}
	}
	return nil
}

func (c *loaded) channelNames(pkg string) []string {
	var out []string
	for _, ch := range c.cfg.Channels {
		if ch.Package == pkg {
			out = append(out, ch.Name)
		}
	}
	return out
}

func (c *loaded) packagesOf(csv string) []string {
	var out []string
	for _, b := range c.cfg.Bundles {
		if b.Name == csv && !slices.Contains(out, b.Package) {
			out = append(out, b.Package)
		}
	}
	return out
}

func (c *loaded) version(pkg, csv string) semver.Version {
	for i := range c.cfg.Bundles {
		if b := &c.cfg.Bundles[i]; b.Package == pkg && b.Name == csv {
			if v := validation.BundleVersion(b); v != nil {
				return *v
			}
		}
	}
	return semver.Version{}
}

// rule is the channel entry's edges for a bundle. A skipRange that does not parse matches
// nothing, as in OLM; the catalog loaded, so opm's own validation accepted it.
func (c *loaded) rule(ch *declcfg.Channel, bundle string) upgrade.Rule {
	for _, e := range ch.Entries {
		if e.Name == bundle {
			r, _ := upgrade.Edges{Replaces: e.Replaces, Skips: e.Skips, SkipRange: e.SkipRange}.Compile()
			return r
		}
	}
	return upgrade.Rule{}
}

// Config is a served catalog's content, nil for a name not served.
func (s *Simulator) Config(catalog string) *declcfg.DeclarativeConfig {
	if c := s.catalogs[catalog]; c != nil {
		return c.cfg
	}
	return nil
}
