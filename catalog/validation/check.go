package validation

import (
	"encoding/json"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/internal/upgrade"
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
}

// Check runs every check and returns every problem, sorted by file.
func Check(c *Catalog, opts Options) []Problem {
	idx := newIndex(c)
	var community *index
	if opts.Community != nil {
		community = newIndex(opts.Community)
	}
	problems := append(opmRules(c), schemaProblems(c)...)
	problems = append(problems, idx.graph(community)...)
	problems = append(problems, idx.deprecations()...)
	if community != nil {
		problems = append(problems, idx.upgradesFrom(community)...)
	}
	if opts.Bundles != nil {
		problems = append(problems, idx.embeddedObjects(opts.Bundles)...)
	}
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
		problems = append(problems, Problem{File: c.Dir, Level: Error, Check: "schema", Message: "the catalog has no " + declcfg.SchemaPackage + ": OLM offers nothing from it"})
	}
	for _, o := range c.Config.Others {
		p := Problem{File: c.file(o.Schema, o.Package, o.Name), Level: Warning, Check: "schema", Package: o.Package,
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
						File: c.file(declcfg.SchemaPackage, pkg, pkg), Level: Error, Check: "opm", Package: pkg,
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

// index is a catalog's packages, channels and bundles by name, with bundle versions parsed once.
type index struct {
	c        *Catalog
	packages map[string]*declcfg.Package
	channels map[string]map[string]*declcfg.Channel
	bundles  map[string]map[string]*bundleInfo
}

type bundleInfo struct {
	b       *declcfg.Bundle
	version *semver.Version
}

func newIndex(c *Catalog) *index {
	idx := &index{c: c, packages: map[string]*declcfg.Package{}, channels: map[string]map[string]*declcfg.Channel{}, bundles: map[string]map[string]*bundleInfo{}}
	cfg := c.Config
	for i := range cfg.Packages {
		idx.packages[cfg.Packages[i].Name] = &cfg.Packages[i]
	}
	for i := range cfg.Channels {
		ch := &cfg.Channels[i]
		if idx.channels[ch.Package] == nil {
			idx.channels[ch.Package] = map[string]*declcfg.Channel{}
		}
		idx.channels[ch.Package][ch.Name] = ch
	}
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		if idx.bundles[b.Package] == nil {
			idx.bundles[b.Package] = map[string]*bundleInfo{}
		}
		idx.bundles[b.Package][b.Name] = &bundleInfo{b: b, version: BundleVersion(b)}
	}
	return idx
}

// BundleVersion reads the bundle's olm.package version without decoding its other properties,
// which may carry whole manifests.
func BundleVersion(b *declcfg.Bundle) *semver.Version {
	for _, p := range b.Properties {
		if p.Type != property.TypePackage {
			continue
		}
		var pkg property.Package
		if json.Unmarshal(p.Value, &pkg) != nil {
			return nil
		}
		if v, err := semver.Parse(pkg.Version); err == nil {
			return &v
		}
		return nil
	}
	return nil
}

func (idx *index) version(pkg, name string) *semver.Version {
	if b := idx.bundles[pkg][name]; b != nil {
		return b.version
	}
	return nil
}

func (idx *index) channelProblem(ch *declcfg.Channel, level Level, check, bundle, format string, args ...any) Problem {
	return Problem{
		File: idx.c.file(declcfg.SchemaChannel, ch.Package, ch.Name), Level: level, Check: check,
		Package: ch.Package, Channel: ch.Name, Bundle: bundle, Message: fmt.Sprintf(format, args...),
	}
}

// heads returns the entries that no other entry replaces or skips (opm's definition). It works on
// the declarative config, not operator-registry's model.Channel.Head: the model exists only for
// packages that ConvertToModel accepts, and these checks must also explain the channels it
// rejects (listing every head, where Head stops at an error).
func heads(ch *declcfg.Channel) []string {
	incoming := map[string]bool{}
	for _, e := range ch.Entries {
		if e.Replaces != "" {
			incoming[e.Replaces] = true
		}
		for _, s := range e.Skips {
			incoming[s] = true
		}
	}
	var hs []string
	for _, e := range ch.Entries {
		if !incoming[e.Name] {
			hs = append(hs, e.Name)
		}
	}
	sort.Strings(hs)
	return hs
}

// replacesLoops returns each loop of a channel's replaces edges once, starting at its smallest
// name, in the order of the edges.
func replacesLoops(ch *declcfg.Channel) [][]string {
	replaces := map[string]string{}
	for _, e := range ch.Entries {
		replaces[e.Name] = e.Replaces
	}
	seen := map[string]bool{}
	var loops [][]string
	for _, start := range slices.Sorted(maps.Keys(replaces)) {
		pos := map[string]int{}
		var path []string
		for n := start; n != "" && !seen[n]; n = replaces[n] {
			if i, ok := pos[n]; ok {
				loop := path[i:]
				least := slices.Index(loop, slices.Min(loop))
				loops = append(loops, append(slices.Clone(loop[least:]), loop[:least]...))
				break
			}
			pos[n] = len(path)
			path = append(path, n)
		}
		for _, n := range path {
			seen[n] = true
		}
	}
	return loops
}

// Head returns the single head of a channel, or "" when it has none or several.
func Head(ch *declcfg.Channel) string {
	if hs := heads(ch); len(hs) == 1 {
		return hs[0]
	}
	return ""
}

// graph checks each channel's upgrade graph: skipRanges parse, edges point at real bundles,
// and every entry has an upgrade path to the head through replaces, skips or skipRange.
func (idx *index) graph(community *index) []Problem {
	var problems []Problem
	for _, pkg := range slices.Sorted(maps.Keys(idx.channels)) {
		for _, name := range slices.Sorted(maps.Keys(idx.channels[pkg])) {
			problems = append(problems, idx.channelGraph(idx.channels[pkg][name], community)...)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(idx.packages)) {
		p := idx.packages[pkg]
		file := idx.c.file(declcfg.SchemaPackage, pkg, pkg)
		ch, ok := idx.channels[pkg][p.DefaultChannel]
		switch {
		case p.DefaultChannel == "":
			problems = append(problems, Problem{File: file, Level: Error, Check: "graph", Package: pkg, Message: "no default channel: OLM cannot pick what to install for a Subscription without a channel"})
		case !ok:
			problems = append(problems, Problem{File: file, Level: Error, Check: "graph", Package: pkg, Message: fmt.Sprintf("default channel %q does not exist", p.DefaultChannel)})
		case Head(ch) == "":
			problems = append(problems, Problem{File: file, Level: Error, Check: "graph", Package: pkg, Channel: ch.Name, Message: fmt.Sprintf("default channel %q has no single head (heads: %v)", ch.Name, heads(ch))})
		}
	}
	return problems
}

func (idx *index) channelGraph(ch *declcfg.Channel, community *index) []Problem {
	var problems []Problem
	rules := map[string]upgrade.Rule{}
	for _, e := range ch.Entries {
		rule, err := edges(e).Compile()
		if err != nil {
			problems = append(problems, idx.channelProblem(ch, Error, "graph", e.Name, "%v", err))
		}
		rules[e.Name] = rule
		for _, t := range rule.Named() {
			if _, ok := idx.bundles[ch.Package][t]; ok {
				continue
			}
			switch {
			case community != nil && community.bundles[ch.Package][t] != nil:
			case community != nil:
				problems = append(problems, idx.channelProblem(ch, Error, "graph", e.Name, "upgrades from %q, which is no bundle of package %s here or in the community catalog", t, ch.Package))
			default:
				problems = append(problems, idx.channelProblem(ch, Warning, "graph", e.Name, "upgrades from %q, which is not in this catalog (pass --community to check it against the community catalog)", t))
			}
		}
	}
	for _, loop := range replacesLoops(ch) {
		problems = append(problems, idx.channelProblem(ch, Error, "graph", loop[0], "the replaces chain loops: %s: an install on it never reaches the head",
			strings.Join(append(loop, loop[0]), " replaces ")))
	}
	hs := heads(ch)
	if len(hs) != 1 {
		return append(problems, idx.channelProblem(ch, Error, "graph", "", "channel must have exactly one head, has %d: %v", len(hs), hs))
	}
	// Walk down from the head: an entry reached is one whose installs upgrade to the head.
	reached := map[string]bool{hs[0]: true}
	queue := []string{hs[0]}
	for len(queue) > 0 {
		rule := rules[queue[0]]
		queue = queue[1:]
		for _, e := range ch.Entries {
			if _, ok := rule.From(e.Name, idx.version(ch.Package, e.Name)); ok && !reached[e.Name] {
				reached[e.Name] = true
				queue = append(queue, e.Name)
			}
		}
	}
	for _, e := range ch.Entries {
		if !reached[e.Name] {
			problems = append(problems, idx.channelProblem(ch, Error, "graph", e.Name, "no upgrade path leads from it to the channel head %s: installs of it are stranded", hs[0]))
		}
	}
	return problems
}

// deprecations checks that olm.deprecations entries refer to what exists.
func (idx *index) deprecations() []Problem {
	var problems []Problem
	for _, d := range idx.c.Config.Deprecations {
		file := idx.c.file(declcfg.SchemaDeprecation, d.Package, "")
		add := func(format string, args ...any) {
			problems = append(problems, Problem{File: file, Level: Error, Check: "deprecation", Package: d.Package, Message: fmt.Sprintf(format, args...)})
		}
		if _, ok := idx.packages[d.Package]; !ok {
			add("deprecates package %q, which is not in this catalog", d.Package)
			continue
		}
		for _, e := range d.Entries {
			ref := e.Reference
			switch ref.Schema {
			case declcfg.SchemaPackage:
			case declcfg.SchemaChannel:
				if _, ok := idx.channels[d.Package][ref.Name]; !ok {
					add("deprecates channel %q, which package %s does not have", ref.Name, d.Package)
				}
			case declcfg.SchemaBundle:
				if _, ok := idx.bundles[d.Package][ref.Name]; !ok {
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
func (idx *index) upgradesFrom(community *index) []Problem {
	var problems []Problem
	for _, pkg := range slices.Sorted(maps.Keys(community.channels)) {
		if _, shared := idx.packages[pkg]; !shared {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(community.channels[pkg])) {
			cch := community.channels[pkg][name]
			ch, ok := idx.channels[pkg][name]
			if !ok {
				problems = append(problems, Problem{File: idx.c.file(declcfg.SchemaPackage, pkg, pkg), Level: Error, Check: "upgrade", Package: pkg, Channel: name,
					Message: "the community catalog has this channel but this catalog does not: Subscriptions on it cannot switch their source"})
				continue
			}
			head, communityHead := Head(ch), Head(cch)
			if head == "" || communityHead == "" {
				continue // reported by the graph checks
			}
			hv, cv := idx.version(pkg, head), community.version(pkg, communityHead)
			if hv == nil || cv == nil {
				continue
			}
			if !hv.GT(*cv) {
				problems = append(problems, idx.channelProblem(ch, Error, "upgrade", head, "head version %s is not newer than the community head %s (%s)", hv, communityHead, cv))
			}
			var entry declcfg.ChannelEntry
			for _, e := range ch.Entries {
				if e.Name == head {
					entry = e
				}
			}
			rule, _ := edges(entry).Compile() // an unparsable skipRange is reported by the graph checks
			for _, ce := range cch.Entries {
				if _, direct := rule.From(ce.Name, community.version(pkg, ce.Name)); !direct {
					problems = append(problems, idx.channelProblem(ch, Error, "upgrade", head, "has no edge from community bundle %s: a Subscription on it would not switch to the head in one step", ce.Name))
				}
			}
		}
	}
	return problems
}

// edges are what a channel entry upgrades from.
func edges(e declcfg.ChannelEntry) upgrade.Edges {
	return upgrade.Edges{Replaces: e.Replaces, Skips: e.Skips, SkipRange: e.SkipRange}
}
