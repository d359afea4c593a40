// Package index is the one indexed model of a file-based catalog that every catalog verb reads:
// packages, their channels and bundles by name, each channel entry with its parsed version and
// compiled upgrade rule, and what OLM derives from a channel (its heads, the bundles others skip,
// the replaces loops, the order in which OLM's resolver prefers candidates).
//
// operator-registry keeps two forms too: declcfg, the wire format, and model, the indexed form.
// Its model exists only for catalogs that pass `opm validate` (ConvertToModel stops at the first
// problem of a package), while `csi-olm catalog validate` must explain the catalogs opm refuses.
// So this model is built from declcfg as it is, tolerates what is invalid (a channel with no or
// several heads, a replaces loop, a bundle without a version, a skipRange that does not parse)
// and leaves judging it to catalog/validation.
package index

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/internal/dependency"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// Catalog is a declarative config indexed by package.
type Catalog struct {
	Config   *declcfg.DeclarativeConfig
	packages map[string]*Package
	names    []string
}

// Package is a package and everything the catalog declares for it. Decl is nil when channels or
// bundles name a package the catalog does not declare.
type Package struct {
	Name         string
	Decl         *declcfg.Package
	Channels     map[string]*Channel
	Bundles      map[string]*Bundle
	Deprecations []*declcfg.Deprecation
}

// Bundle is an olm.bundle with its version parsed once; Version is nil when its olm.package
// property is missing or its version is not semver.
type Bundle struct {
	Name    string
	Decl    *declcfg.Bundle
	Version *semver.Version
}

// Channel is an olm.channel with its entries indexed and OLM's view of its graph.
type Channel struct {
	Name, Package string
	Decl          *declcfg.Channel
	// Entries are in the order the channel declares them.
	Entries   []*Entry
	byName    map[string]*Entry
	heads     []string
	skippedBy map[string][]string
}

// Entry is a channel entry: the bundle's name and version (nil when the package has no such
// bundle or its version does not parse) and what it upgrades from. RuleErr is the skipRange's
// parse error; Rule then matches nothing by range, as in OLM.
type Entry struct {
	Name    string
	Decl    *declcfg.ChannelEntry
	Version *semver.Version
	Rule    upgrade.Rule
	RuleErr error
}

// New indexes cfg. It keeps pointers into cfg, which must not change afterwards.
func New(cfg *declcfg.DeclarativeConfig) *Catalog {
	c := &Catalog{Config: cfg, packages: map[string]*Package{}}
	get := func(name string) *Package {
		p := c.packages[name]
		if p == nil {
			p = &Package{Name: name, Channels: map[string]*Channel{}, Bundles: map[string]*Bundle{}}
			c.packages[name] = p
		}
		return p
	}
	for i := range cfg.Packages {
		get(cfg.Packages[i].Name).Decl = &cfg.Packages[i]
	}
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		get(b.Package).Bundles[b.Name] = &Bundle{Name: b.Name, Decl: b, Version: BundleVersion(b)}
	}
	for i := range cfg.Channels {
		ch := &cfg.Channels[i]
		p := get(ch.Package)
		p.Channels[ch.Name] = newChannel(ch, p)
	}
	for i := range cfg.Deprecations {
		d := &cfg.Deprecations[i]
		p := get(d.Package)
		p.Deprecations = append(p.Deprecations, d)
	}
	c.names = slices.Sorted(maps.Keys(c.packages))
	return c
}

func newChannel(ch *declcfg.Channel, p *Package) *Channel {
	c := &Channel{Name: ch.Name, Package: ch.Package, Decl: ch, byName: map[string]*Entry{}, skippedBy: map[string][]string{}}
	incoming := map[string]bool{}
	for i := range ch.Entries {
		d := &ch.Entries[i]
		e := &Entry{Name: d.Name, Decl: d}
		if b := p.Bundles[d.Name]; b != nil {
			e.Version = b.Version
		}
		e.Rule, e.RuleErr = upgrade.Edges{Replaces: d.Replaces, Skips: d.Skips, SkipRange: d.SkipRange}.Compile()
		c.Entries = append(c.Entries, e)
		c.byName[d.Name] = e
		if d.Replaces != "" {
			incoming[d.Replaces] = true
		}
		for _, s := range d.Skips {
			incoming[s] = true
			c.skippedBy[s] = append(c.skippedBy[s], d.Name)
		}
	}
	for _, e := range c.Entries {
		if !incoming[e.Name] {
			c.heads = append(c.heads, e.Name)
		}
	}
	sort.Strings(c.heads)
	return c
}

// OrZero is v, or 0.0.0 for a bundle without a readable version, which orders it first.
func OrZero(v *semver.Version) semver.Version {
	if v == nil {
		return semver.Version{}
	}
	return *v
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

// Packages lists the packages by name.
func (c *Catalog) Packages() []*Package {
	out := make([]*Package, len(c.names))
	for i, n := range c.names {
		out[i] = c.packages[n]
	}
	return out
}

// Package is the named package, nil when the catalog has nothing of it.
func (c *Catalog) Package(name string) *Package { return c.packages[name] }

// Channel is a package's channel, nil when either is missing.
func (c *Catalog) Channel(pkg, channel string) *Channel {
	if p := c.packages[pkg]; p != nil {
		return p.Channels[channel]
	}
	return nil
}

// PackagesOf lists the packages that have a bundle of that name.
func (c *Catalog) PackagesOf(bundle string) []string {
	var out []string
	for _, n := range c.names {
		if c.packages[n].Bundles[bundle] != nil {
			out = append(out, n)
		}
	}
	return out
}

// DefaultChannel is the package's declared default channel, "" when it declares none.
func (p *Package) DefaultChannel() string {
	if p.Decl == nil {
		return ""
	}
	return p.Decl.DefaultChannel
}

// ChannelNames lists the package's channels by name.
func (p *Package) ChannelNames() []string { return slices.Sorted(maps.Keys(p.Channels)) }

// SortedChannels lists the package's channels by name.
func (p *Package) SortedChannels() []*Channel {
	out := make([]*Channel, 0, len(p.Channels))
	for _, n := range p.ChannelNames() {
		out = append(out, p.Channels[n])
	}
	return out
}

// Version is the version of the package's bundle, nil when it has no such bundle or no version.
func (p *Package) Version(bundle string) *semver.Version {
	if b := p.Bundles[bundle]; b != nil {
		return b.Version
	}
	return nil
}

// Entry is the channel's entry of that name, nil when it has none.
func (ch *Channel) Entry(name string) *Entry { return ch.byName[name] }

// Heads are the entries no other entry of the channel replaces or skips (opm's definition),
// sorted: a valid channel has exactly one.
func (ch *Channel) Heads() []string { return ch.heads }

// Head is the channel's single head, "" when it has none or several.
func (ch *Channel) Head() string {
	if len(ch.heads) == 1 {
		return ch.heads[0]
	}
	return ""
}

// SkippedBy lists the channel's entries that skip the bundle.
func (ch *Channel) SkippedBy(bundle string) []string { return ch.skippedBy[bundle] }

// Order is the order in which OLM's resolver prefers a channel's candidates (its sortChannel):
// from the head down the replaces chain, leaving out every bundle another bundle of the channel
// skips. A channel without a single head has no order.
func (ch *Channel) Order() []string {
	var order []string
	seen := map[string]bool{}
	for name := ch.Head(); name != "" && !seen[name]; {
		seen[name] = true
		e := ch.byName[name]
		if e == nil {
			break
		}
		if len(ch.skippedBy[name]) == 0 {
			order = append(order, name)
		}
		name = e.Decl.Replaces
	}
	return order
}

// Loops lists each loop of the channel's replaces edges once, starting at its smallest name.
func (ch *Channel) Loops() [][]string {
	seen := map[string]bool{}
	var loops [][]string
	names := make([]string, len(ch.Entries))
	for i, e := range ch.Entries {
		names[i] = e.Name
	}
	slices.Sort(names)
	for _, start := range names {
		pos := map[string]int{}
		var path []string
		for n := start; n != "" && !seen[n]; {
			if i, ok := pos[n]; ok {
				loop := path[i:]
				least := slices.Index(loop, slices.Min(loop))
				loops = append(loops, append(slices.Clone(loop[least:]), loop[:least]...))
				break
			}
			pos[n] = len(path)
			path = append(path, n)
			e := ch.byName[n]
			if e == nil {
				break
			}
			n = e.Decl.Replaces
		}
		for _, n := range path {
			seen[n] = true
		}
	}
	return loops
}

// ReachesHead reports, for each entry, whether some chain of upgrade edges leads from it to the
// channel's single head. Without a single head nothing reaches it.
func (ch *Channel) ReachesHead() map[string]bool { return ch.reachesHead(false) }

// OLMReachesHead is ReachesHead as OLM walks the chains: it never upgrades to a bundle another
// bundle of the channel skips, so a chain through one is cut there.
func (ch *Channel) OLMReachesHead() map[string]bool { return ch.reachesHead(true) }

func (ch *Channel) reachesHead(olm bool) map[string]bool {
	head := ch.Head()
	reached := map[string]bool{}
	if head == "" {
		return reached
	}
	reached[head] = true
	queue := []*Entry{ch.byName[head]}
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		if olm && e.Name != head && len(ch.SkippedBy(e.Name)) > 0 {
			continue
		}
		for _, from := range ch.Entries {
			if _, ok := e.Rule.From(from.Name, from.Version); ok && !reached[from.Name] {
				reached[from.Name] = true
				queue = append(queue, from)
			}
		}
	}
	return reached
}

// Edge is an upgrade edge as a channel declares it: To upgrades from From by Kind. A skipRange
// edge comes from the range itself, so that it is one edge however many bundles it covers.
type Edge struct {
	From, To string
	Kind     upgrade.Kind
}

// Edges lists the edges the channel's entries declare.
func (ch *Channel) Edges() []Edge {
	var out []Edge
	for _, e := range ch.Entries {
		d := e.Decl
		if d.Replaces != "" {
			out = append(out, Edge{d.Replaces, d.Name, upgrade.Replaces})
		}
		for _, s := range d.Skips {
			out = append(out, Edge{s, d.Name, upgrade.Skips})
		}
		if d.SkipRange != "" {
			out = append(out, Edge{d.SkipRange, d.Name, upgrade.SkipRange})
		}
	}
	return out
}

// EntryNames lists the channel's bundles by name.
func (ch *Channel) EntryNames() []string { return slices.Sorted(maps.Keys(ch.byName)) }

// Dependencies is the dependency graph of the catalogs' bundles, as OLM looks requirements up
// across every CatalogSource. A property that does not decode is opm's to report (`catalog
// validate`) and is left out.
func Dependencies(catalogs ...*Catalog) *dependency.Graph {
	g := dependency.NewGraph()
	for _, c := range catalogs {
		for _, p := range c.Packages() {
			for _, name := range slices.Sorted(maps.Keys(p.Bundles)) {
				_ = g.Add(p.Name, dependency.FromDeclcfg(p.Bundles[name].Decl.Properties))
			}
		}
	}
	return g
}

// OpenShiftLimits are what a bundle says about the clusters it runs on: its
// olm.maxOpenShiftVersion and its CSV's minKubeVersion, nil when it sets none.
type OpenShiftLimits struct {
	Max     *openshift.Minor
	MinKube *semver.Version
	// Err says why a max version the bundle sets cannot be read, as OLM says it: OLM then
	// reports the cluster not upgradeable.
	Err error
}

// RunsAt says whether some release of minor m can run the bundle: OLM installs it there (its
// minKubeVersion within the Kubernetes of one of m's releases, openshift.FitKube) and keeps no
// cluster at m from upgrading for it (its olm.maxOpenShiftVersion not below m). It is the one
// rule of what a cluster at a minor may have installed from the minor's index.
func (l OpenShiftLimits) RunsAt(m openshift.Minor) bool {
	return (l.MinKube == nil || m.FitKube(*l.MinKube).Fit != openshift.FitsNone) && (l.Max == nil || !l.Max.Less(m))
}

// Limits reads the bundle's OpenShiftLimits. minKubeVersion comes from the CSV metadata of a
// published catalog (olm.csv.metadata) or the CSV an offline one embeds (olm.bundle.object),
// decoding only that field.
func Limits(b *declcfg.Bundle) OpenShiftLimits {
	var l OpenShiftLimits
	var maxes []string
	minKube := ""
	for _, p := range b.Properties {
		switch p.Type {
		case openshift.MaxVersionProperty:
			maxes = append(maxes, string(p.Value))
		case property.TypeCSVMetadata:
			var m struct {
				MinKubeVersion string `json:"minKubeVersion"`
			}
			if json.Unmarshal(p.Value, &m) == nil {
				minKube = m.MinKubeVersion
			}
		}
	}
	switch len(maxes) {
	case 0:
	case 1:
		if m, err := openshift.ParseMaxVersion(maxes[0]); err != nil {
			l.Err = err
		} else {
			l.Max = &m
		}
	default:
		l.Err = fmt.Errorf("defining more than one %q property is not allowed", openshift.MaxVersionProperty)
	}
	if minKube == "" && len(b.CsvJSON) > 0 {
		var csv struct {
			Spec struct {
				MinKubeVersion string `json:"minKubeVersion"`
			} `json:"spec"`
		}
		if json.Unmarshal([]byte(b.CsvJSON), &csv) == nil {
			minKube = csv.Spec.MinKubeVersion
		}
	}
	// OLM parses minKubeVersion tolerantly too (a leading v, a missing patch).
	if v, err := semver.ParseTolerant(minKube); minKube != "" && err == nil {
		l.MinKube = &v
	}
	return l
}
