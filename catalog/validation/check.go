package validation

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/internal/openshift"
)

// Options enable the checks that need more than the catalog itself.
type Options struct {
	// Community is the community catalog that this (certified) catalog's packages upgrade from:
	// edges may point into it, and every package both catalogs carry must upgrade every
	// community version directly to the certified head.
	Community *Catalog
	// Bundles, when set, holds the bundle directories (<package>/<version>/) that embedded bundle
	// objects must agree with.
	Bundles *BundleSource
	// Minor, when set, is the OpenShift minor whose index the catalog is: each bundle must run
	// on a cluster at that minor.
	Minor *openshift.Minor
	// Settings turn rules off, on, or their problems into warnings or errors, by rule name
	// (ParseSettings).
	Settings map[string]Setting
	// AllowedRegistries are the prefixes bundle images must start with; none checks nothing.
	AllowedRegistries []string
}

// Check runs every check and returns every problem, sorted by file.
func Check(c *Catalog, opts Options) []Problem {
	idx := newIndex(c)
	var community *catalogIndex
	if opts.Community != nil {
		community = newIndex(opts.Community)
	}
	problems := append(opmRules(c), schemaProblems(c)...)
	problems = append(problems, idx.graph(community, opts.Settings)...)
	problems = append(problems, idx.deprecations()...)
	problems = append(problems, idx.bundleImages(opts.AllowedRegistries, opts.Settings)...)
	if enabled(RuleNetworkPolicy, opts.Settings) {
		problems = append(problems, idx.networkPolicies()...)
	}
	if community != nil {
		problems = append(problems, idx.upgradesFrom(community)...)
	}
	if opts.Bundles != nil {
		problems = append(problems, idx.embeddedObjects(opts.Bundles)...)
	}
	if opts.Minor != nil {
		problems = append(problems, idx.minorProblems(*opts.Minor)...)
	}
	problems = applySettings(problems, opts.Settings)
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].File < problems[j].File })
	return problems
}

// olmSchemas are the schemas OLM reads from a catalog; it passes over objects of any other.
var olmSchemas = []string{declcfg.SchemaPackage, declcfg.SchemaChannel, declcfg.SchemaBundle, declcfg.SchemaDeprecation}

// schemaProblems reports what opm accepts and OLM never sees: a catalog without a package, and
// objects of a schema OLM does not read, an error in OLM's own namespace of schemas (a
// misspelling), a warning elsewhere (another tool's data).
func schemaProblems(c *Catalog) []Problem {
	var problems []Problem
	if len(c.Config.Packages) == 0 {
		problems = append(problems, Problem{File: c.Dir, Level: Error, Rule: RuleSchema, Message: "the catalog has no " + declcfg.SchemaPackage + ": OLM offers nothing from it"})
	}
	for _, o := range c.Config.Others {
		p := Problem{File: c.file(o.Schema, o.Package, o.Name), Level: Warning, Rule: RuleSchema, Package: o.Package,
			Message: fmt.Sprintf("%q is a schema OLM does not read (it reads %s): OLM passes over %q", o.Schema, strings.Join(olmSchemas, ", "), o.Name)}
		if strings.HasPrefix(o.Schema, "olm.") {
			p.Level = Error
			p.Message += "; a misspelling?"
		}
		problems = append(problems, p)
	}
	return problems
}

// opmRules applies `opm validate`'s rules (declcfg.ConvertToModel) package by package, so a
// broken package does not hide the problems of the others.
func opmRules(c *Catalog) []Problem {
	byPackage := map[string]*declcfg.DeclarativeConfig{}
	get := func(pkg string) *declcfg.DeclarativeConfig {
		if byPackage[pkg] == nil {
			byPackage[pkg] = &declcfg.DeclarativeConfig{}
		}
		return byPackage[pkg]
	}
	cfg := c.Config
	for _, p := range cfg.Packages {
		get(p.Name).Packages = append(get(p.Name).Packages, p)
	}
	for _, ch := range cfg.Channels {
		get(ch.Package).Channels = append(get(ch.Package).Channels, ch)
	}
	for _, b := range cfg.Bundles {
		get(b.Package).Bundles = append(get(b.Package).Bundles, b)
	}
	for _, d := range cfg.Deprecations {
		get(d.Package).Deprecations = append(get(d.Package).Deprecations, d)
	}
	for _, o := range cfg.Others {
		get(o.Package).Others = append(get(o.Package).Others, o)
	}
	// Packages are independent, so they are converted on every core (opm converts them one
	// after the other); results keep the package order.
	pkgs := slices.Sorted(maps.Keys(byPackage))
	results := make([]*Problem, len(pkgs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(pkgs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pkg := pkgs[i]
				if _, err := declcfg.ConvertToModel(*byPackage[pkg]); err != nil {
					results[i] = &Problem{
						File: c.file(declcfg.SchemaPackage, pkg, pkg), Level: Error, Rule: RuleOPM, Package: pkg,
						Message: strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "\n    "),
					}
				}
			}
		}()
	}
	for i := range pkgs {
		next <- i
	}
	close(next)
	wg.Wait()
	var problems []Problem
	for _, p := range results {
		if p != nil {
			problems = append(problems, *p)
		}
	}
	return problems
}

// catalogIndex is a loaded catalog's model beside the catalog, whose files problems name.
type catalogIndex struct {
	c *Catalog
	m *index.Catalog
}

func newIndex(c *Catalog) *catalogIndex { return &catalogIndex{c: c, m: index.New(c.Config)} }

func (idx *catalogIndex) channelProblem(ch *index.Channel, level Level, rule, bundle, format string, args ...any) Problem {
	return Problem{
		File: idx.c.file(declcfg.SchemaChannel, ch.Package, ch.Name), Level: level, Rule: rule,
		Package: ch.Package, Channel: ch.Name, Bundle: bundle, Message: fmt.Sprintf(format, args...),
	}
}

// graph checks each channel's upgrade graph: skipRanges parse, edges point at real bundles,
// every entry has an upgrade path to the head through replaces, skips or skipRange, and the
// field's graph rules the settings leave on.
func (idx *catalogIndex) graph(community *catalogIndex, settings map[string]Setting) []Problem {
	var problems []Problem
	pruned, loops := enabled(RuleSkipRangeWithoutReplace, settings), enabled(RuleEdgeLoop, settings)
	for _, p := range idx.m.Packages() {
		for _, ch := range p.SortedChannels() {
			problems = append(problems, idx.channelGraph(p, ch, community)...)
			if pruned {
				problems = append(problems, idx.skipRangeWithoutReplaces(ch)...)
			}
			if loops {
				problems = append(problems, idx.edgeLoops(ch)...)
			}
		}
	}
	for _, p := range idx.m.Packages() {
		if p.Decl == nil {
			continue // opm's rules report channels and bundles of an undeclared package
		}
		file := idx.c.file(declcfg.SchemaPackage, p.Name, p.Name)
		ch, ok := p.Channels[p.DefaultChannel()]
		switch {
		case p.DefaultChannel() == "":
			problems = append(problems, Problem{File: file, Level: Error, Rule: RuleDefaultChannel, Package: p.Name, Message: "no default channel: OLM cannot pick what to install for a Subscription without a channel"})
		case !ok:
			problems = append(problems, Problem{File: file, Level: Error, Rule: RuleDefaultChannel, Package: p.Name, Message: fmt.Sprintf("default channel %q does not exist", p.DefaultChannel())})
		case ch.Head() == "":
			problems = append(problems, Problem{File: file, Level: Error, Rule: RuleDefaultChannel, Package: p.Name, Channel: ch.Name, Message: fmt.Sprintf("default channel %q has no single head (heads: %v)", ch.Name, ch.Heads())})
		}
	}
	return problems
}

func (idx *catalogIndex) channelGraph(p *index.Package, ch *index.Channel, community *catalogIndex) []Problem {
	var problems []Problem
	for _, e := range ch.Entries {
		if e.RuleErr != nil {
			problems = append(problems, idx.channelProblem(ch, Error, RuleSkipRange, e.Name, "%v", e.RuleErr))
		}
		for _, t := range e.Rule.Named() {
			if _, ok := p.Bundles[t]; ok {
				continue
			}
			switch {
			case community != nil && community.m.Package(p.Name) != nil && community.m.Package(p.Name).Bundles[t] != nil:
			case community != nil:
				problems = append(problems, idx.channelProblem(ch, Error, RuleReplacesAvailable, e.Name, "upgrades from %q, which is no bundle of package %s here or in the community catalog", t, p.Name))
			default:
				problems = append(problems, idx.channelProblem(ch, Warning, RuleReplacesAvailable, e.Name, "upgrades from %q, which is not in this catalog: installs of it from an earlier catalog still upgrade (a pruned tail); if another catalog has it, validate with that one (--community) to check the edge", t))
			}
		}
	}
	for _, loop := range ch.Loops() {
		problems = append(problems, idx.channelProblem(ch, Error, RuleReplacesLoop, loop[0], "the replaces chain loops: %s: an install on it never reaches the head",
			strings.Join(append(loop, loop[0]), " replaces ")))
	}
	hs := ch.Heads()
	if len(hs) != 1 {
		return append(problems, idx.channelProblem(ch, Error, RuleChannelHead, "", "channel must have exactly one head, has %d: %v", len(hs), hs))
	}
	reached, olmReached := ch.ReachesHead(), ch.OLMReachesHead()
	for _, e := range ch.Entries {
		switch {
		case !reached[e.Name]:
			problems = append(problems, idx.channelProblem(ch, Error, RuleStranded, e.Name, "no upgrade path leads from it to the channel head %s: installs of it are stranded", hs[0]))
		case !olmReached[e.Name]:
			// opm accepts it, and catalogs in the field have it: a warning, not an error.
			problems = append(problems, idx.channelProblem(ch, Warning, RuleSkippedPath, e.Name, "every upgrade path from it to the channel head %s goes through a bundle that another bundle skips, and OLM never upgrades to a skipped bundle: installs of it are stranded", hs[0]))
		}
	}
	return problems
}

// deprecations checks that olm.deprecations entries refer to what exists.
func (idx *catalogIndex) deprecations() []Problem {
	var problems []Problem
	for _, d := range idx.c.Config.Deprecations {
		file := idx.c.file(declcfg.SchemaDeprecation, d.Package, "")
		add := func(format string, args ...any) {
			problems = append(problems, Problem{File: file, Level: Error, Rule: RuleDeprecation, Package: d.Package, Message: fmt.Sprintf(format, args...)})
		}
		p := idx.m.Package(d.Package)
		if p.Decl == nil {
			add("deprecates package %q, which is not in this catalog", d.Package)
			continue
		}
		for _, e := range d.Entries {
			ref := e.Reference
			switch ref.Schema {
			case declcfg.SchemaPackage:
			case declcfg.SchemaChannel:
				if _, ok := p.Channels[ref.Name]; !ok {
					add("deprecates channel %q, which package %s does not have", ref.Name, d.Package)
				}
			case declcfg.SchemaBundle:
				if _, ok := p.Bundles[ref.Name]; !ok {
					add("deprecates bundle %q, which package %s does not have", ref.Name, d.Package)
				}
			default:
				add("deprecation entry refers to schema %q: only olm.package, olm.channel and olm.bundle can be deprecated", ref.Schema)
			}
			if e.Message == "" {
				add("deprecation entry for %s %q has no message for users", ref.Schema, ref.Name)
			}
		}
	}
	return problems
}

// upgradesFrom checks every package this catalog shares with the community catalog: each
// community channel exists here, and its head is newer than the community head and upgrades
// every community version directly, so that switching a Subscription's source lands on it.
func (idx *catalogIndex) upgradesFrom(community *catalogIndex) []Problem {
	var problems []Problem
	for _, cp := range community.m.Packages() {
		p := idx.m.Package(cp.Name)
		if p == nil || p.Decl == nil {
			continue
		}
		for _, cch := range cp.SortedChannels() {
			ch, ok := p.Channels[cch.Name]
			if !ok {
				problems = append(problems, Problem{File: idx.c.file(declcfg.SchemaPackage, p.Name, p.Name), Level: Error, Rule: RuleCommunityUpgrade, Package: p.Name, Channel: cch.Name,
					Message: "the community catalog has this channel but this catalog does not: Subscriptions on it cannot switch their source"})
				continue
			}
			head, communityHead := ch.Head(), cch.Head()
			if head == "" || communityHead == "" {
				continue // reported by the graph checks
			}
			hv, cv := p.Version(head), cp.Version(communityHead)
			if hv == nil || cv == nil {
				continue
			}
			if !hv.GT(*cv) {
				problems = append(problems, idx.channelProblem(ch, Error, RuleCommunityUpgrade, head, "head version %s is not newer than the community head %s (%s)", hv, communityHead, cv))
			}
			rule := ch.Entry(head).Rule // an unparsable skipRange is reported by the graph checks
			for _, ce := range cch.Entries {
				if _, direct := rule.From(ce.Name, ce.Version); !direct {
					problems = append(problems, idx.channelProblem(ch, Error, RuleCommunityUpgrade, head, "has no edge from community bundle %s: a Subscription on it would not switch to the head in one step", ce.Name))
				}
			}
		}
	}
	return problems
}
