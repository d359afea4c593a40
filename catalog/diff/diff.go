// Package diff is the `csi-olm catalog diff` verb: what changed between two file-based catalogs,
// and which changes make things worse for users who installed from the old one.
//
// A change is breaking when it gives some Subscription that worked against the old catalog a
// worse outcome against the new one: OLM reached the head and now stops short of it or cannot
// resolve, OLM now stops at a lower version than before, or the package, channel or default
// channel the Subscription names is gone. Outcomes are not guessed from the edges: each bundle of
// the old catalog is installed, and OLM's own resolver is asked for its path through the old
// catalog and through the new one (catalog/simulate), with the dependencies other catalogs
// provide. A problem the old catalog already had is no change: it is reported apart.
//
// Only packages whose content changed, or whose dependencies' providers changed, are compared:
// for any other, OLM's answers are the same in both catalogs.
package diff

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/simulate"
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
	// Stranded: OLM took the bundle to the head of the old catalog, and not the new one.
	Stranded Kind = "stranded"
	// LandsLower: OLM stopped short of the head in both catalogs, lower in the new one.
	LandsLower         Kind = "lands-lower"
	DeprecationAdded   Kind = "deprecation-added"
	DeprecationRemoved Kind = "deprecation-removed"
	// AlreadyStranded: OLM stopped short of the head in the old catalog already, and stops no
	// lower in the new one. It is reported apart, not as a change.
	AlreadyStranded Kind = "already-stranded"
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
	// Breaking says the change makes things worse for users of the old catalog; Message says
	// what and for whom.
	Breaking bool   `json:"breaking"`
	Message  string `json:"message"`
}

// Report is every change, per package in name order, the breaking ones flagged.
type Report struct {
	Old     string   `json:"old"`
	New     string   `json:"new"`
	Changes []Change `json:"changes"`
	// AlreadyBroken are the starts OLM already left short of the head in the old catalog, and
	// leaves no lower in the new one: no change, reported apart.
	AlreadyBroken []Change `json:"alreadyBroken,omitempty"`
	// Unchanged are the packages identical in both catalogs, and whose dependencies' providers
	// are too: nothing about them is compared.
	Unchanged []string `json:"unchanged,omitempty"`
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

// Compare diffs the catalogs sim serves as "old" and "new", asking OLM whether users of the old
// one are worse off, with the operators the cluster already has. oldName and newName say where
// the catalogs came from, for the report.
func Compare(ctx context.Context, oldName, newName string, sim *simulate.Simulator, existing []simulate.Existing) (*Report, error) {
	o, n := sim.Index("old"), sim.Index("new")
	r := &Report{Old: oldName, New: newName}
	names := map[string]bool{}
	for _, p := range append(o.Packages(), n.Packages()...) {
		if p.Decl != nil {
			names[p.Name] = true
		}
	}
	changed := changedPackages(o, n)
	for _, pkg := range slices.Sorted(maps.Keys(names)) {
		op, np := o.Package(pkg), n.Package(pkg)
		switch {
		case np == nil || np.Decl == nil:
			r.add(Change{Kind: PackageRemoved, Package: pkg, Breaking: true,
				Message: fmt.Sprintf("package %s removed: its Subscriptions no longer resolve", pkg)})
			continue
		case op == nil || op.Decl == nil:
			r.add(Change{Kind: PackageAdded, Package: pkg, Message: fmt.Sprintf("package %s added (default channel %s)", pkg, np.DefaultChannel())})
			continue
		case !changed[pkg]:
			r.Unchanged = append(r.Unchanged, pkg)
			continue
		}
		if err := r.comparePackage(ctx, op, np, sim, existing); err != nil {
			return nil, err
		}
		r.compareDeprecations(op, np)
	}
	return r, nil
}

func (r *Report) add(c Change) { r.Changes = append(r.Changes, c) }

func (r *Report) comparePackage(ctx context.Context, op, np *index.Package, sim *simulate.Simulator, existing []simulate.Existing) error {
	pkg := op.Name
	if op.DefaultChannel() != np.DefaultChannel() {
		if np.Channels[op.DefaultChannel()] == nil {
			r.add(Change{Kind: DefaultChannelRemoved, Package: pkg, From: op.DefaultChannel(), To: np.DefaultChannel(), Breaking: true,
				Message: fmt.Sprintf("default channel %s no longer exists (the default is now %s): Subscriptions made from OperatorHub's default no longer resolve", op.DefaultChannel(), np.DefaultChannel())})
		} else {
			r.add(Change{Kind: DefaultChannelChanged, Package: pkg, From: op.DefaultChannel(), To: np.DefaultChannel(),
				Message: fmt.Sprintf("default channel %s -> %s (new Subscriptions only; %s still exists)", op.DefaultChannel(), np.DefaultChannel(), op.DefaultChannel())})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(union(op.Channels, np.Channels))) {
		och, nch := op.Channels[name], np.Channels[name]
		switch {
		case nch == nil:
			msg := fmt.Sprintf("channel %s removed: its Subscriptions no longer resolve", name)
			if to := renamedTo(och, np, op); to != "" {
				msg = fmt.Sprintf("channel %s removed; %s, new, has the same bundles, but Subscriptions name their channel and are not moved: they no longer resolve", name, to)
			}
			r.add(Change{Kind: ChannelRemoved, Package: pkg, Channel: name, Breaking: true, Message: msg})
			continue
		case och == nil:
			r.add(Change{Kind: ChannelAdded, Package: pkg, Channel: name, Message: fmt.Sprintf("channel %s added (head %s)", name, nch.Head())})
			continue
		}
		if err := r.compareChannel(ctx, op, np, och, nch, sim, existing); err != nil {
			return err
		}
	}
	return nil
}

func (r *Report) compareChannel(ctx context.Context, op, np *index.Package, och, nch *index.Channel, sim *simulate.Simulator, existing []simulate.Existing) error {
	pkg, name := op.Name, och.Name
	for _, b := range slices.Sorted(maps.Keys(union(entrySet(och), entrySet(nch)))) {
		switch {
		case nch.Entry(b) == nil:
			r.add(Change{Kind: BundleRemoved, Package: pkg, Channel: name, Bundle: b, Message: fmt.Sprintf("bundle %s removed from channel %s", b, name)})
		case och.Entry(b) == nil:
			r.add(Change{Kind: BundleAdded, Package: pkg, Channel: name, Bundle: b, Message: fmt.Sprintf("bundle %s added to channel %s", b, name)})
		}
	}
	oldEdges, newEdges := edgeSet(och), edgeSet(nch)
	for _, e := range sortedEdges(union(oldEdges, newEdges)) {
		switch {
		case !newEdges[e]:
			r.add(Change{Kind: EdgeRemoved, Package: pkg, Channel: name, Bundle: e.To, Edge: e.Kind, From: e.From, To: e.To, Message: fmt.Sprintf("edge removed in channel %s: %s", name, describe(e))})
		case !oldEdges[e]:
			r.add(Change{Kind: EdgeAdded, Package: pkg, Channel: name, Bundle: e.To, Edge: e.Kind, From: e.From, To: e.To, Message: fmt.Sprintf("edge added in channel %s: %s", name, describe(e))})
		}
	}
	oh, nh := och.Head(), nch.Head()
	ov, nv := op.Version(oh), np.Version(nh)
	lowered := ov != nil && nv != nil && nv.LT(*ov)
	if oh != nh {
		c := Change{Kind: HeadMoved, Package: pkg, Channel: name, From: oh, To: nh, Message: fmt.Sprintf("head of channel %s moved %s -> %s", name, oh, nh)}
		if lowered {
			c.Kind, c.Breaking = HeadLowered, true
			c.Message = fmt.Sprintf("head of channel %s moved down, %s (%s) -> %s (%s): users on %s have nothing to upgrade to and OLM never downgrades", name, oh, ov, nh, nv, oh)
		}
		r.add(c)
	}
	// Every bundle a user may have installed from the old channel, asked of OLM against the old
	// catalog and against the new.
	for _, b := range och.EntryNames() {
		start := simulate.Start{CSV: b, Package: pkg, Channel: name, Existing: existing}
		before, err := sim.Outcome(ctx, "old", start)
		if err != nil {
			return fmt.Errorf("simulating %s in channel %s of the old catalog: %w", b, name, err)
		}
		start.InstalledFrom = "old"
		after, err := sim.Outcome(ctx, "new", start)
		if err != nil {
			return fmt.Errorf("simulating %s in channel %s of the new catalog: %w", b, name, err)
		}
		what := "users on it"
		if nch.Entry(b) == nil {
			what = "it is removed, and users on it"
		}
		c := Change{Package: pkg, Channel: name, Bundle: b, Breaking: true}
		switch {
		case after.Result == simulate.AtHead:
			continue
		case before.Result == simulate.AtHead:
			// The old head above a lowered one is the head-lowered change already.
			if lowered && b == oh {
				continue
			}
			c.Kind = Stranded
			c.Message = fmt.Sprintf("%s in channel %s: %s reached the head %s and are now stranded at %s: %s", b, name, what, before.End, after.End, after.Why())
		case after.EndVersion.LT(*before.EndVersion):
			c.Kind = LandsLower
			c.Message = fmt.Sprintf("%s in channel %s: OLM took %s to %s and now stops lower, at %s: %s", b, name, what, before.End, after.End, after.Why())
		default:
			c.Kind, c.Breaking = AlreadyStranded, false
			c.Message = fmt.Sprintf("%s in channel %s: already stranded before this change, at %s: %s", b, name, before.End, before.Why())
			if after.End != before.End || after.Why() != before.Why() {
				c.Message += fmt.Sprintf("; now at %s: %s", after.End, after.Why())
			}
			r.AlreadyBroken = append(r.AlreadyBroken, c)
			continue
		}
		r.add(c)
	}
	return nil
}

// changedPackages lists the packages whose content differs between the catalogs, and those
// whose bundles require an API or a package that a changed package provides, transitively.
// Any other package gets the same answers from OLM in both catalogs: the catalogs that provide
// dependencies, and the installed operators, are the same for both.
func changedPackages(o, n *index.Catalog) map[string]bool {
	changed := map[string]bool{}
	providers := index.Providers(o, n)
	requires := map[string]map[string]bool{}
	constrained := map[string]bool{}
	var all []string
	for _, c := range []*index.Catalog{o, n} {
		for _, p := range c.Packages() {
			if requires[p.Name] == nil {
				requires[p.Name] = map[string]bool{}
				all = append(all, p.Name)
			}
		}
	}
	for _, c := range []*index.Catalog{o, n} {
		for _, p := range c.Packages() {
			for _, b := range p.Bundles {
				req := b.Requires()
				for _, g := range req.GVKs {
					for _, provider := range providers[g] {
						requires[p.Name][provider] = true
					}
				}
				for _, pkg := range req.Packages {
					requires[p.Name][pkg] = true
				}
				constrained[p.Name] = constrained[p.Name] || req.Constraints
			}
		}
	}
	for _, pkg := range all {
		op, np := o.Package(pkg), n.Package(pkg)
		changed[pkg] = op == nil || np == nil || fingerprint(op) != fingerprint(np)
	}
	anyChanged := slices.ContainsFunc(all, func(p string) bool { return changed[p] })
	for grew := true; grew; {
		grew = false
		for _, pkg := range all {
			if changed[pkg] {
				continue
			}
			// olm.constraint expressions may name any package or API.
			if constrained[pkg] && anyChanged {
				changed[pkg], grew = true, true
				continue
			}
			for dep := range requires[pkg] {
				if changed[dep] && dep != pkg {
					changed[pkg], grew = true, true
					break
				}
			}
		}
	}
	return changed
}

// fingerprint is a digest of everything the catalog declares for a package.
func fingerprint(p *index.Package) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(p.Decl)
	for _, ch := range p.SortedChannels() {
		_ = enc.Encode(ch.Decl)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Bundles)) {
		_ = enc.Encode(p.Bundles[name].Decl)
	}
	for _, d := range p.Deprecations {
		_ = enc.Encode(d)
	}
	return string(h.Sum(nil))
}

// renamedTo names a channel that only the new package has, with the same bundles as ch.
func renamedTo(ch *index.Channel, newPkg, oldPkg *index.Package) string {
	want := ch.EntryNames()
	for _, nch := range newPkg.SortedChannels() {
		if oldPkg.Channels[nch.Name] == nil && slices.Equal(nch.EntryNames(), want) {
			return nch.Name
		}
	}
	return ""
}

func entrySet(ch *index.Channel) map[string]bool {
	out := map[string]bool{}
	for _, e := range ch.Entries {
		out[e.Name] = true
	}
	return out
}

func edgeSet(ch *index.Channel) map[index.Edge]bool {
	out := map[index.Edge]bool{}
	for _, e := range ch.Edges() {
		out[e] = true
	}
	return out
}

func describe(e index.Edge) string {
	if e.Kind == upgrade.SkipRange {
		return fmt.Sprintf("%s has skipRange %q", e.To, e.From)
	}
	return fmt.Sprintf("%s %s %s", e.To, e.Kind, e.From)
}

func sortedEdges(m map[index.Edge]bool) []index.Edge {
	out := slices.Collect(maps.Keys(m))
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.To != b.To {
			return a.To < b.To
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.From < b.From
	})
	return out
}

// compareDeprecations reports the package's olm.deprecations entries added and removed.
func (r *Report) compareDeprecations(op, np *index.Package) {
	type key struct{ schema, name string }
	collect := func(p *index.Package) map[key]string {
		out := map[key]string{}
		for _, d := range p.Deprecations {
			for _, e := range d.Entries {
				out[key{e.Reference.Schema, e.Reference.Name}] = e.Message
			}
		}
		return out
	}
	od, nd := collect(op), collect(np)
	keys := slices.Collect(maps.Keys(union(od, nd)))
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].schema < keys[j].schema || (keys[i].schema == keys[j].schema && keys[i].name < keys[j].name)
	})
	for _, k := range keys {
		what := "package " + op.Name
		if k.schema != declcfg.SchemaPackage {
			what = fmt.Sprintf("%s %s of package %s", strings.TrimPrefix(k.schema, "olm."), k.name, op.Name)
		}
		c := Change{Package: op.Name}
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
