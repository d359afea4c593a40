// Package diff is the `csi-olm catalog diff` verb: what changed between two file-based catalogs,
// and which changes strand users who installed from the old one.
//
// A change is breaking when some Subscription that worked against the old catalog no longer
// reaches the new catalog's head, or no longer resolves at all. Whether a user on a bundle is
// stranded is not guessed from the edges: the bundle is installed, as from the old catalog, and
// OLM's own resolver is asked for the path through the new one (catalog/simulate).
package diff

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// Kind names a change.
type Kind string

const (
	PackageAdded          Kind = "package-added"
	PackageRemoved        Kind = "package-removed"
	DefaultChannelChanged Kind = "default-channel-changed"
	DefaultChannelRemoved Kind = "default-channel-removed"
	ChannelAdded          Kind = "channel-added"
	ChannelRemoved        Kind = "channel-removed"
	BundleAdded           Kind = "bundle-added"
	BundleRemoved         Kind = "bundle-removed"
	EdgeAdded             Kind = "edge-added"
	EdgeRemoved           Kind = "edge-removed"
	HeadMoved             Kind = "head-moved"
	HeadLowered           Kind = "head-lowered"
	Stranded              Kind = "stranded"
	DeprecationAdded      Kind = "deprecation-added"
	DeprecationRemoved    Kind = "deprecation-removed"
)

// Change is one difference between the catalogs.
type Change struct {
	Kind    Kind   `json:"kind"`
	Package string `json:"package"`
	Channel string `json:"channel,omitempty"`
	Bundle  string `json:"bundle,omitempty"`
	// Edge is the field of an added or removed edge, From the bundle or skipRange it comes from.
	Edge upgrade.Kind `json:"edge,omitempty"`
	From string       `json:"from,omitempty"`
	To   string       `json:"to,omitempty"`
	// Breaking says the change strands users of the old catalog; Message says what and whom.
	Breaking bool   `json:"breaking"`
	Message  string `json:"message"`
}

// Report is every change, per package in name order, the breaking ones flagged.
type Report struct {
	Old     string   `json:"old"`
	New     string   `json:"new"`
	Changes []Change `json:"changes"`
}

// Breaking lists the breaking changes.
func (r *Report) Breaking() []Change {
	var out []Change
	for _, c := range r.Changes {
		if c.Breaking {
			out = append(out, c)
		}
	}
	return out
}

type catalog struct {
	cfg      *declcfg.DeclarativeConfig
	packages map[string]*declcfg.Package
	channels map[string]map[string]*declcfg.Channel
	versions map[string]map[string]*semver.Version
}

func index(cfg *declcfg.DeclarativeConfig) *catalog {
	c := &catalog{cfg: cfg, packages: map[string]*declcfg.Package{}, channels: map[string]map[string]*declcfg.Channel{}, versions: map[string]map[string]*semver.Version{}}
	for i := range cfg.Packages {
		p := &cfg.Packages[i]
		c.packages[p.Name] = p
		c.channels[p.Name] = map[string]*declcfg.Channel{}
		c.versions[p.Name] = map[string]*semver.Version{}
	}
	for i := range cfg.Channels {
		ch := &cfg.Channels[i]
		if c.channels[ch.Package] != nil {
			c.channels[ch.Package][ch.Name] = ch
		}
	}
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		if c.versions[b.Package] != nil {
			c.versions[b.Package][b.Name] = validation.BundleVersion(b)
		}
	}
	return c
}

// Compare diffs the catalogs sim serves as "old" and "new", asking OLM whether users of the old
// one are stranded. oldName and newName say where they came from, for the report.
func Compare(ctx context.Context, oldName, newName string, sim *simulate.Simulator) (*Report, error) {
	o, n := index(sim.Config("old")), index(sim.Config("new"))
	r := &Report{Old: oldName, New: newName}
	for _, pkg := range slices.Sorted(maps.Keys(union(o.packages, n.packages))) {
		op, np := o.packages[pkg], n.packages[pkg]
		switch {
		case np == nil:
			r.add(Change{Kind: PackageRemoved, Package: pkg, Breaking: true,
				Message: fmt.Sprintf("package %s removed: its Subscriptions no longer resolve", pkg)})
			continue
		case op == nil:
			r.add(Change{Kind: PackageAdded, Package: pkg, Message: fmt.Sprintf("package %s added (default channel %s)", pkg, np.DefaultChannel)})
			continue
		}
		if err := r.comparePackage(ctx, o, n, pkg, sim); err != nil {
			return nil, err
		}
	}
	r.compareDeprecations(o, n)
	return r, nil
}

func (r *Report) add(c Change) { r.Changes = append(r.Changes, c) }

func (r *Report) comparePackage(ctx context.Context, o, n *catalog, pkg string, sim *simulate.Simulator) error {
	op, np := o.packages[pkg], n.packages[pkg]
	ochs, nchs := o.channels[pkg], n.channels[pkg]
	if op.DefaultChannel != np.DefaultChannel {
		if nchs[op.DefaultChannel] == nil {
			r.add(Change{Kind: DefaultChannelRemoved, Package: pkg, From: op.DefaultChannel, To: np.DefaultChannel, Breaking: true,
				Message: fmt.Sprintf("default channel %s no longer exists (the default is now %s): Subscriptions made from OperatorHub's default no longer resolve", op.DefaultChannel, np.DefaultChannel)})
		} else {
			r.add(Change{Kind: DefaultChannelChanged, Package: pkg, From: op.DefaultChannel, To: np.DefaultChannel,
				Message: fmt.Sprintf("default channel %s -> %s (new Subscriptions only; %s still exists)", op.DefaultChannel, np.DefaultChannel, op.DefaultChannel)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(union(ochs, nchs))) {
		och, nch := ochs[name], nchs[name]
		switch {
		case nch == nil:
			msg := fmt.Sprintf("channel %s removed: its Subscriptions no longer resolve", name)
			if to := renamedTo(och, nchs, ochs); to != "" {
				msg = fmt.Sprintf("channel %s removed; %s, new, has the same bundles, but Subscriptions name their channel and are not moved: they no longer resolve", name, to)
			}
			r.add(Change{Kind: ChannelRemoved, Package: pkg, Channel: name, Breaking: true, Message: msg})
			continue
		case och == nil:
			r.add(Change{Kind: ChannelAdded, Package: pkg, Channel: name, Message: fmt.Sprintf("channel %s added (head %s)", name, validation.Head(nch))})
			continue
		}
		if err := r.compareChannel(ctx, o, n, pkg, och, nch, sim); err != nil {
			return err
		}
	}
	return nil
}

func (r *Report) compareChannel(ctx context.Context, o, n *catalog, pkg string, och, nch *declcfg.Channel, sim *simulate.Simulator) error {
	name := och.Name
	oe, ne := entries(och), entries(nch)
	for _, b := range slices.Sorted(maps.Keys(union(oe, ne))) {
		switch {
		case ne[b] == nil:
			r.add(Change{Kind: BundleRemoved, Package: pkg, Channel: name, Bundle: b, Message: fmt.Sprintf("bundle %s removed from channel %s", b, name)})
		case oe[b] == nil:
			r.add(Change{Kind: BundleAdded, Package: pkg, Channel: name, Bundle: b, Message: fmt.Sprintf("bundle %s added to channel %s", b, name)})
		}
	}
	oldEdges, newEdges := edges(och), edges(nch)
	for _, e := range sortedEdges(union(oldEdges, newEdges)) {
		switch {
		case !newEdges[e]:
			r.add(Change{Kind: EdgeRemoved, Package: pkg, Channel: name, Bundle: e.to, Edge: e.kind, From: e.from, To: e.to, Message: fmt.Sprintf("edge removed in channel %s: %s", name, e)})
		case !oldEdges[e]:
			r.add(Change{Kind: EdgeAdded, Package: pkg, Channel: name, Bundle: e.to, Edge: e.kind, From: e.from, To: e.to, Message: fmt.Sprintf("edge added in channel %s: %s", name, e)})
		}
	}
	oh, nh := validation.Head(och), validation.Head(nch)
	ov, nv := o.versions[pkg][oh], n.versions[pkg][nh]
	lowered := ov != nil && nv != nil && nv.LT(*ov)
	if oh != nh {
		c := Change{Kind: HeadMoved, Package: pkg, Channel: name, From: oh, To: nh, Message: fmt.Sprintf("head of channel %s moved %s -> %s", name, oh, nh)}
		if lowered {
			c.Kind, c.Breaking = HeadLowered, true
			c.Message = fmt.Sprintf("head of channel %s moved down, %s (%s) -> %s (%s): users on %s have nothing to upgrade to and OLM never downgrades", name, oh, ov, nh, nv, oh)
		}
		r.add(c)
	}
	// Every bundle a user may have installed from the old channel, asked of OLM against the new.
	for _, b := range slices.Sorted(maps.Keys(oe)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := sim.Simulate(ctx, "new", simulate.Start{CSV: b, Package: pkg, Channel: name, InstalledFrom: "old"})
		if err != nil {
			// OLM failing to resolve strands the user as surely as a missing edge does.
			p = &simulate.Path{Stranded: err.Error()}
		}
		// The old head above a lowered one is the head-lowered change already.
		if p.Stranded == "" || (lowered && b == oh) {
			continue
		}
		what := "users on it"
		if ne[b] == nil {
			what = "it is removed, and users on it"
		}
		r.add(Change{Kind: Stranded, Package: pkg, Channel: name, Bundle: b, Breaking: true,
			Message: fmt.Sprintf("%s in channel %s: %s are stranded, %s", b, name, what, p.Stranded)})
	}
	return nil
}

// renamedTo names a channel that only the new catalog has, with the same bundles as ch.
func renamedTo(ch *declcfg.Channel, newChannels, oldChannels map[string]*declcfg.Channel) string {
	want := slices.Sorted(maps.Keys(entries(ch)))
	for _, name := range slices.Sorted(maps.Keys(newChannels)) {
		if oldChannels[name] == nil && slices.Equal(slices.Sorted(maps.Keys(entries(newChannels[name]))), want) {
			return name
		}
	}
	return ""
}

func entries(ch *declcfg.Channel) map[string]*declcfg.ChannelEntry {
	out := map[string]*declcfg.ChannelEntry{}
	for i := range ch.Entries {
		out[ch.Entries[i].Name] = &ch.Entries[i]
	}
	return out
}

// edge is an upgrade edge as the channel declares it; a skipRange edge comes from the range.
type edge struct {
	from, to string
	kind     upgrade.Kind
}

func (e edge) String() string {
	if e.kind == upgrade.SkipRange {
		return fmt.Sprintf("%s has skipRange %q", e.to, e.from)
	}
	return fmt.Sprintf("%s %s %s", e.to, e.kind, e.from)
}

func edges(ch *declcfg.Channel) map[edge]bool {
	out := map[edge]bool{}
	for _, e := range ch.Entries {
		if e.Replaces != "" {
			out[edge{e.Replaces, e.Name, upgrade.Replaces}] = true
		}
		for _, s := range e.Skips {
			out[edge{s, e.Name, upgrade.Skips}] = true
		}
		if e.SkipRange != "" {
			out[edge{e.SkipRange, e.Name, upgrade.SkipRange}] = true
		}
	}
	return out
}

func sortedEdges(m map[edge]bool) []edge {
	out := slices.Collect(maps.Keys(m))
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.to != b.to {
			return a.to < b.to
		}
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.from < b.from
	})
	return out
}

// compareDeprecations reports olm.deprecations entries added and removed.
func (r *Report) compareDeprecations(o, n *catalog) {
	type key struct{ pkg, schema, name string }
	collect := func(c *catalog) map[key]string {
		out := map[key]string{}
		for _, d := range c.cfg.Deprecations {
			for _, e := range d.Entries {
				out[key{d.Package, e.Reference.Schema, e.Reference.Name}] = e.Message
			}
		}
		return out
	}
	od, nd := collect(o), collect(n)
	keys := slices.Collect(maps.Keys(union(od, nd)))
	sort.Slice(keys, func(i, j int) bool {
		return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j])
	})
	for _, k := range keys {
		what := "package " + k.pkg
		if k.schema != declcfg.SchemaPackage {
			what = fmt.Sprintf("%s %s of package %s", strings.TrimPrefix(k.schema, "olm."), k.name, k.pkg)
		}
		c := Change{Package: k.pkg}
		if k.schema == declcfg.SchemaChannel {
			c.Channel = k.name
		} else if k.schema == declcfg.SchemaBundle {
			c.Bundle = k.name
		}
		_, had := od[k]
		_, has := nd[k]
		switch {
		case !had:
			c.Kind, c.Message = DeprecationAdded, fmt.Sprintf("%s deprecated: %s", what, nd[k])
		case !has:
			c.Kind, c.Message = DeprecationRemoved, fmt.Sprintf("%s no longer deprecated", what)
		default:
			continue
		}
		r.add(c)
	}
	sort.SliceStable(r.Changes, func(i, j int) bool { return r.Changes[i].Package < r.Changes[j].Package })
}

func union[K comparable, V any](a, b map[K]V) map[K]bool {
	out := map[K]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
