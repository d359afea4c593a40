// Package olmv0 predicts OLM v0, offline: the bundles OLM installs one after the other for a
// Subscription, from an installed CSV up to its channel's head, with the dependencies it installs
// on the way. `csi-olm catalog simulate` prints its paths, `catalog diff` and
// `catalog cluster-upgrade` compare them, and `migrate subscription` follows one.
//
// Where the rules come from:
//   - What OLM installs next is decided by OLM's own resolver (internal/olmresolver, over
//     operator-lifecycle-manager v0.46.0, the OLM the test bed runs): the namespace's installed
//     operators and Subscriptions, every catalog by priority for dependencies. Its candidates
//     are the channel's bundles whose replaces or skips names the installed CSV or whose
//     skipRange contains its version, ordered from the channel head down, and its SAT solver
//     takes the first it can install (deprecated-by-property bundles and unsatisfiable
//     dependencies are refused).
//   - The catalogs reach that resolver through operator-registry's cache and RegistryServer, the
//     code `opm serve` runs, so replaces, skips, skipRange, dependencies and deprecations are
//     read as a cluster reads them.
//   - The explanations of why a candidate was passed over restate two rules of the resolver,
//     read from catalog/index: sortChannel leaves bundles that another bundle skips out of the
//     channel order, and the candidate nearest the head wins. Where the resolver refuses a
//     candidate, its own message says why.
//   - The edge a step takes is named by internal/upgrade, the project's statement of OLM's edge
//     rule.
//
// A test on the test bed (test/e2e, TestSimulateMatchesOLM) installs every start of the project's
// catalogs and of the synthetic ones with real OLM, dependencies on a second catalog included,
// and checks OLM takes the predicted path.
package olmv0

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

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
	Installed *olmresolver.Operator `json:"-"`
	// Existing are the other operators installed in the namespace. One of the start's own
	// package is left out: the start is that package's operator.
	Existing []Existing `json:"-"`
	// Running says the start is an install that runs, so what it requires is installed beside
	// it: each requirement Existing does not meet gets a Provider.
	Running bool `json:"-"`
}

// Existing is an operator the namespace already has.
type Existing struct {
	olmresolver.Operator
	// From says where it comes from, for reports: a catalog, or "cluster".
	From string
}

// Path is what OLM does from a Start: each bundle it installs, in order.
type Path struct {
	Subscription string         `json:"subscription,omitempty"`
	Catalog      string         `json:"catalog"`
	Package      string         `json:"package"`
	Channel      string         `json:"channel"`
	Start        predict.Bundle `json:"start"`
	Steps        []Step         `json:"steps"`
	// Providers meet the requirements of a Running start that nothing else installed meets.
	Providers []Provider `json:"providers,omitempty"`
	// Dependencies are the operators of other packages OLM installs or upgrades on the way.
	Dependencies []Dependency `json:"dependencies,omitempty"`
	// End is the CSV OLM settles on; Head the channel's head.
	End    string         `json:"end"`
	Head   string         `json:"head"`
	Result predict.Result `json:"result"`
	// Stranded says why OLM stops short of the head without an error.
	Stranded string `json:"stranded,omitempty"`
	// Loop is the circle OLM would go round, each CSV once, when Result is Loops.
	Loop []string `json:"loop,omitempty"`
	// ResolutionFailed is the condition OLM sets on the Subscription when it cannot resolve.
	ResolutionFailed *olmresolver.ResolutionError `json:"resolutionFailed,omitempty"`
	// EndVersion is End's version, to compare where two catalogs leave a start.
	EndVersion *semver.Version `json:"-"`
}

// Why says why the path does not end at the head: OLM's ResolutionFailed message, or why it
// keeps the CSV; "" when it reaches the head.
func (p *Path) Why() string {
	switch p.Result {
	case predict.Unresolvable:
		return "OLM cannot resolve the Subscription (ResolutionFailed, " + p.ResolutionFailed.Reason + "): " + p.ResolutionFailed.Message
	case predict.Stranded:
		return p.Stranded
	case predict.Loops:
		return loopWhy(p.Loop)
	}
	return ""
}

// loopWhy says what OLM does on a circle of upgrades.
func loopWhy(loop []string) string {
	return fmt.Sprintf("OLM would upgrade in a circle, %s, and never settle: the channel's edges loop",
		predict.Circle(loop))
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

// By names the field of To's channel entry the step takes, with the skipRange it matched, and the
// other fields that would have let it.
func (st Step) By() string {
	by := string(st.Edge)
	if st.SkipRange != "" {
		by += " " + st.SkipRange
	}
	if len(st.Edges) > 1 {
		by += fmt.Sprintf(" (also %s)", joinKinds(st.Edges[1:]))
	}
	return by
}

// Passed is a candidate OLM did not choose.
type Passed struct {
	Bundle  string       `json:"bundle"`
	Version string       `json:"version"`
	Edge    upgrade.Kind `json:"edge"`
	Why     string       `json:"why"`
}

// Dependency is an operator of another package OLM installs, or upgrades, on the way.
type Dependency struct {
	CSV     string `json:"csv"`
	Version string `json:"version"`
	Package string `json:"package"`
	Catalog string `json:"catalog"`
	// Replaces is the dependency's CSV it upgrades, "" for a new install.
	Replaces string `json:"replaces,omitempty"`
	// With is the package's CSV installed when OLM installs it.
	With string `json:"with"`
}

// Simulator holds the catalogs, served in-process, and OLM's resolver over them. It is safe for
// concurrent use.
type Simulator struct {
	resolver *olmresolver.Resolver
	catalogs map[string]*loaded
	// existing are the cluster's installed operators.
	existing []Existing
	close    []func()

	mu   sync.Mutex
	memo map[string]resolution
	// providers are the providers found for running starts' requirements (meetRequirements).
	providers map[string]meeting
}

type loaded struct {
	predict.Catalog
	idx *index.Catalog
	// source numbers the CatalogSource the catalog is a version of.
	source int
}

// resolution is what OLM answered for one state of the namespace.
type resolution struct {
	ops    []*cache.Entry
	failed *olmresolver.ResolutionError
}

// Close stops the in-process registries.
func (s *Simulator) Close() {
	for _, c := range s.close {
		c()
	}
	s.close = nil
}

// Index is a served catalog's model, nil for a name not served.
func (s *Simulator) Index(catalog string) *index.Catalog {
	if c := s.catalogs[catalog]; c != nil {
		return c.idx
	}
	return nil
}

// Starts lists every start a catalog offers: each bundle of each channel of each package, as a
// Subscription to that channel starting at that bundle, by package, channel and version.
func (s *Simulator) Starts(catalog string) []Start {
	c := s.catalogs[catalog]
	if c == nil {
		return nil
	}
	var out []Start
	for _, p := range c.idx.Packages() {
		for _, ch := range p.SortedChannels() {
			entries := append([]*index.Entry(nil), ch.Entries...)
			sort.SliceStable(entries, func(i, j int) bool { return index.OrZero(entries[i].Version).LT(index.OrZero(entries[j].Version)) })
			for _, e := range entries {
				out = append(out, Start{CSV: e.Name, Package: p.Name, Channel: ch.Name})
			}
		}
	}
	return out
}

// StartsFrom lists the bundles of catalog from whose package and channel target carries, each
// as installed from its channel and subscribed to the same channel in target: what a source
// switch starts from.
func (s *Simulator) StartsFrom(from, target string) []Start {
	tc := s.catalogs[target]
	if tc == nil {
		return nil
	}
	var out []Start
	for _, st := range s.Starts(from) {
		if tc.idx.Channel(st.Package, st.Channel) != nil {
			st.InstalledFrom = from
			out = append(out, st)
		}
	}
	return out
}

// Simulate predicts the path OLM takes from start in catalog target, each step explained. A
// start OLM cannot resolve is a Path with Result Unresolvable; an error is a start that does not
// exist (*StartError) or a failure to simulate.
func (s *Simulator) Simulate(ctx context.Context, target string, start Start) (*Path, error) {
	return s.walk(ctx, target, start, true)
}

// Outcome is Simulate without the explanation of each step: where OLM ends, and why it stops
// short of the head.
func (s *Simulator) Outcome(ctx context.Context, target string, start Start) (*Path, error) {
	return s.walk(ctx, target, start, false)
}

// operator is an installed operator of the simulated namespace and the catalog it came from.
type operator struct {
	olmresolver.Operator
	pkg, from string
	// key identifies what OLM sees of it, so that equal namespaces share one resolution.
	key string
}

func newOperator(op olmresolver.Operator, from string) operator {
	o := operator{Operator: op, pkg: olmresolver.PackageOf(op.Properties), from: from}
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%s", op.CSV, op.Version)
	for _, p := range op.Properties {
		fmt.Fprintf(&b, "|%s=%s", p.Type, p.Value)
	}
	if sub := op.Subscription; sub != nil {
		fmt.Fprintf(&b, "|sub=%s/%s/%s/%s", sub.Name, sub.Package, sub.Channel, sub.Catalog)
	}
	o.key = b.String()
	return o
}

func (s *Simulator) walk(ctx context.Context, target string, start Start, explain bool) (*Path, error) {
	tc := s.catalogs[target]
	if tc == nil {
		return nil, &predict.StartError{Kind: predict.NoCatalog, Catalog: target}
	}
	from := target
	if start.InstalledFrom != "" {
		from = start.InstalledFrom
	}
	fc := s.catalogs[from]
	if fc == nil {
		return nil, &predict.StartError{Kind: predict.NoCatalog, Catalog: from}
	}
	pkg := start.Package
	if pkg == "" {
		pkgs := fc.idx.PackagesOf(start.CSV)
		switch len(pkgs) {
		case 0:
			return nil, &predict.StartError{Kind: predict.CSVNotInCatalog, CSV: start.CSV, Catalog: fc.Dir}
		case 1:
			pkg = pkgs[0]
		default:
			return nil, &predict.StartError{Kind: predict.AmbiguousCSV, CSV: start.CSV, Catalog: fc.Dir, Choices: pkgs}
		}
	}
	p := tc.idx.Package(pkg)
	if p == nil {
		return nil, &predict.StartError{Kind: predict.NoPackage, Package: pkg, Catalog: tc.Dir}
	}
	channel := start.Channel
	if channel == "" {
		channel = p.DefaultChannel()
	}
	ch := p.Channels[channel]
	if ch == nil {
		return nil, &predict.StartError{Kind: predict.NoChannel, Package: pkg, Channel: channel, Catalog: tc.Dir, Choices: p.ChannelNames()}
	}
	installed := start.Installed
	startFrom := from
	if installed != nil {
		startFrom = "cluster"
	} else {
		op, err := s.catalogOperator(from, pkg, start.CSV)
		if err != nil {
			return nil, err
		}
		installed = &op
	}
	main := *installed
	main.Subscription = &olmresolver.Subscription{Name: pkg, Package: pkg, Channel: channel, Catalog: target}
	path := &Path{
		Subscription: start.Subscription, Catalog: target, Package: pkg, Channel: channel,
		Start: predict.Bundle{Name: main.CSV, Version: main.Version.String(), Catalog: startFrom},
		Head:  ch.Head(),
	}
	ns := []operator{newOperator(main, startFrom)}
	for _, e := range start.Existing {
		if olmresolver.PackageOf(e.Properties) != pkg {
			ns = append(ns, newOperator(e.Operator, e.From))
		}
	}
	if start.Running {
		var err error
		if ns, path.Providers, err = s.meetRequirements(from, target, ns); err != nil {
			return nil, err
		}
	}
	// seen numbers each state of the namespace the walk reached, and installs names the package's
	// CSV in each: a state reached again is a circle OLM would go round for good.
	seen := map[string]int{}
	var installs []string
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		key := stateKey(ns)
		if at, ok := seen[key]; ok {
			path.Result, path.Loop = predict.Loops, installs[at:]
			break
		}
		seen[key] = len(installs)
		installs = append(installs, ns[0].CSV)
		res, err := s.resolve(target, ns)
		if err != nil {
			return nil, fmt.Errorf("resolving %s from %s in channel %q of %s: %w", pkg, ns[0].CSV, channel, tc.Dir, err)
		}
		if res.failed != nil {
			path.Result, path.ResolutionFailed = predict.Unresolvable, res.failed
			break
		}
		prev := ns
		var deps []Dependency
		ns, deps = apply(ns, res.ops)
		if stateKey(ns) == key {
			break
		}
		if ns[0].CSV != prev[0].CSV {
			st := Step{From: prev[0].CSV, To: ns[0].CSV, Version: ns[0].Version.String()}
			if explain {
				if st, err = s.step(ctx, tc, ch, prev, ns); err != nil {
					return nil, err
				}
			}
			path.Steps = append(path.Steps, st)
		}
		for i := range deps {
			deps[i].With = ns[0].CSV
		}
		path.Dependencies = append(path.Dependencies, deps...)
	}
	end := ns[0]
	path.End, path.EndVersion = end.CSV, &end.Version
	switch {
	case path.Result == predict.Unresolvable, path.Result == predict.Loops:
	case path.End == path.Head:
		path.Result = predict.AtHead
	default:
		path.Result = predict.Stranded
		why, err := s.stranded(ctx, tc, ch, ns)
		if err != nil {
			return nil, err
		}
		path.Stranded = why
	}
	return path, nil
}

// catalogOperator is a bundle of a served catalog as OLM's csvSource sees it once installed:
// its name, version and the properties OLM projects onto the CSV.
func (s *Simulator) catalogOperator(catalog, pkg, csv string) (olmresolver.Operator, error) {
	entries, err := s.resolver.Find(catalog, pkg, cache.PkgPredicate(pkg), cache.CSVNamePredicate(csv))
	if err != nil {
		return olmresolver.Operator{}, fmt.Errorf("reading catalog %s: %w", s.catalogs[catalog].Dir, err)
	}
	if len(entries) == 0 {
		return olmresolver.Operator{}, &predict.StartError{Kind: predict.CSVNotInCatalog, CSV: csv, Package: pkg, Catalog: s.catalogs[catalog].Dir}
	}
	if entries[0].Version == nil {
		return olmresolver.Operator{}, fmt.Errorf("CSV %q in catalog %s has no version", csv, s.catalogs[catalog].Dir)
	}
	return olmresolver.Operator{CSV: entries[0].Name, Version: *entries[0].Version, Properties: entries[0].Properties}, nil
}

// stateKey identifies a namespace: its first operator (the simulated package's) and the others
// in any order.
func stateKey(ns []operator) string {
	others := make([]string, 0, len(ns)-1)
	for _, o := range ns[1:] {
		others = append(others, o.key)
	}
	sort.Strings(others)
	return ns[0].key + "\n" + strings.Join(others, "\n")
}

// resolve asks OLM once per state of the namespace: the catalogs do not change, so an answer
// holds for every start that reaches the same state.
func (s *Simulator) resolve(target string, ns []operator) (resolution, error) {
	hidden := s.versionsBeside(target)
	key := strings.Join(hidden, ",") + "|" + stateKey(ns)
	s.mu.Lock()
	res, ok := s.memo[key]
	s.mu.Unlock()
	if ok {
		return res, nil
	}
	ops := make([]olmresolver.Operator, len(ns))
	for i, o := range ns {
		ops[i] = o.Operator
	}
	entries, err := s.resolver.Resolve(ops, hidden...)
	if failed, ok := asResolutionError(err); ok {
		res.failed = failed
	} else if err != nil {
		return res, err
	} else {
		res.ops = entries
	}
	s.mu.Lock()
	s.memo[key] = res
	s.mu.Unlock()
	return res, nil
}

// versionsBeside are the other versions of the target catalog's CatalogSource, which a cluster
// serving target does not serve.
func (s *Simulator) versionsBeside(target string) []string {
	var out []string
	if t := s.catalogs[target]; t != nil {
		for _, name := range slices.Sorted(maps.Keys(s.catalogs)) {
			if c := s.catalogs[name]; name != target && c.source == t.source {
				out = append(out, name)
			}
		}
	}
	return out
}

// apply installs what OLM resolved, as OLM's step resolver does: a CSV replaces the installed
// CSV of the Subscription that resolves to it (same package, channel and catalog); any other is
// a dependency, installed beside the others with a Subscription of its own. A Subscription that
// resolves to the CSV it has is up to date: the resolver chooses an installed bundle again when
// its skipRange contains its own version (">=5.0.0"), and OLM then keeps it (ResolveSteps).
// The simulated package's operator stays first.
func apply(ns []operator, ops []*cache.Entry) ([]operator, []Dependency) {
	out := append([]operator(nil), ns...)
	var deps []Dependency
	for _, op := range ops {
		si := op.SourceInfo
		next := olmresolver.Operator{CSV: op.Name, Version: *op.Version, Properties: op.Properties}
		replaced := ""
		i := 0
		for ; i < len(out); i++ {
			sub := out[i].Subscription
			if sub != nil && sub.Package == si.Package && sub.Channel == si.Channel && sub.Catalog == si.Catalog.Name {
				break
			}
		}
		if i < len(out) && out[i].CSV == op.Name {
			continue
		}
		if i < len(out) {
			replaced = out[i].CSV
			next.Subscription = out[i].Subscription
			out[i] = newOperator(next, si.Catalog.Name)
		} else {
			next.Subscription = &olmresolver.Subscription{
				Name:    strings.Join([]string{si.Package, si.Channel, si.Catalog.Name, si.Catalog.Namespace}, "-"),
				Package: si.Package, Channel: si.Channel, Catalog: si.Catalog.Name,
			}
			out = append(out, newOperator(next, si.Catalog.Name))
		}
		if i != 0 {
			deps = append(deps, Dependency{CSV: op.Name, Version: op.Version.String(), Package: si.Package, Catalog: si.Catalog.Name, Replaces: replaced})
		}
	}
	return out, deps
}
