// Package diff is the `csi-olm catalog diff` verb: what changed between two file-based catalogs,
// and which changes make things worse for users who installed from the old one.
//
// A change is breaking when it gives some Subscription that worked against the old catalog a
// worse outcome against the new one: OLM reached the head and now stops short of it or cannot
// resolve, OLM now stops at a lower version than before, or the package, channel or default
// channel the Subscription names is gone. Outcomes are not guessed from the edges: each bundle of
// the old catalog is installed, and OLM's own resolver is asked for its path through the old
// catalog and through the new one (catalog/predict/olmv0), with the dependencies other catalogs
// provide. A problem the old catalog already had is no change: it is reported apart.
//
// Only packages whose content changed, or whose dependencies' providers changed, are compared:
// for any other, OLM's answers are the same in both catalogs.
//
// With OLM v1 the users are ClusterExtensions and the judge is operator-controller's rule
// (catalog/predict/olmv1): the same kinds of change, the head being what a new
// ClusterExtension with the same spec installs, and a default channel no one reads.
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
	"github.com/csi-olm/csi-olm/catalog/predict"
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

// Compare diffs catalog o, named oldName in the report, with n, newName, asking j whether users
// of o are worse off. changed are the packages to compare (Changed): any other gets the same
// answers in both.
func Compare(ctx context.Context, oldName, newName string, o, n *index.Catalog, changed map[string]bool, j predict.Judge) (*Report, error) {
	c := &comparer{Report: &Report{Old: oldName, New: newName}, j: j, w: j.Wording()}
	names := map[string]bool{}
	for _, p := range append(o.Packages(), n.Packages()...) {
		if p.Decl != nil {
			names[p.Name] = true
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(names)) {
		op, np := o.Package(pkg), n.Package(pkg)
		switch {
		case np == nil || np.Decl == nil:
			c.add(Change{Kind: PackageRemoved, Package: pkg, Breaking: true,
				Message: fmt.Sprintf("package %s removed: its %s no longer resolve", pkg, c.w.Users)})
			continue
		case op == nil || op.Decl == nil:
			c.add(Change{Kind: PackageAdded, Package: pkg, Message: fmt.Sprintf("package %s added (default channel %s)", pkg, np.DefaultChannel())})
			continue
		case !changed[pkg]:
			c.Unchanged = append(c.Unchanged, pkg)
			continue
		}
		if err := c.comparePackage(ctx, op, np); err != nil {
			return nil, err
		}
		c.compareDeprecations(op, np)
	}
	return c.Report, nil
}

// comparer builds a report, asking j where users go.
type comparer struct {
	*Report
	j predict.Judge
	w predict.Wording
}

func (r *Report) add(c Change) { r.Changes = append(r.Changes, c) }

func (c *comparer) comparePackage(ctx context.Context, op, np *index.Package) error {
	pkg := op.Name
	if op.DefaultChannel() != np.DefaultChannel() {
		switch {
		case c.w.V1:
			c.add(Change{Kind: DefaultChannelChanged, Package: pkg, From: op.DefaultChannel(), To: np.DefaultChannel(),
				Message: fmt.Sprintf("default channel %s -> %s (operator-controller does not read it: a ClusterExtension naming no channel takes every channel)", op.DefaultChannel(), np.DefaultChannel())})
		case np.Channels[op.DefaultChannel()] == nil:
			c.add(Change{Kind: DefaultChannelRemoved, Package: pkg, From: op.DefaultChannel(), To: np.DefaultChannel(), Breaking: true,
				Message: fmt.Sprintf("default channel %s no longer exists (the default is now %s): Subscriptions made from OperatorHub's default no longer resolve", op.DefaultChannel(), np.DefaultChannel())})
		default:
			c.add(Change{Kind: DefaultChannelChanged, Package: pkg, From: op.DefaultChannel(), To: np.DefaultChannel(),
				Message: fmt.Sprintf("default channel %s -> %s (new Subscriptions only; %s still exists)", op.DefaultChannel(), np.DefaultChannel(), op.DefaultChannel())})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(union(op.Channels, np.Channels))) {
		och, nch := op.Channels[name], np.Channels[name]
		switch {
		case nch == nil:
			msg := fmt.Sprintf("channel %s removed: its %s no longer resolve", name, c.w.Users)
			if c.w.V1 {
				msg = fmt.Sprintf("channel %s removed: ClusterExtensions naming only it no longer resolve", name)
			}
			if to := renamedTo(och, np, op); to != "" {
				msg = fmt.Sprintf("channel %s removed; %s, new, has the same bundles, but %s name their channel and are not moved: they no longer resolve", name, to, c.w.Users)
			}
			c.add(Change{Kind: ChannelRemoved, Package: pkg, Channel: name, Breaking: true, Message: msg})
			continue
		case och == nil:
			c.add(Change{Kind: ChannelAdded, Package: pkg, Channel: name, Message: fmt.Sprintf("channel %s added (head %s)", name, nch.Head())})
			continue
		}
		if err := c.compareChannel(ctx, op, np, och, nch); err != nil {
			return err
		}
	}
	if c.w.V1 {
		// The usual ClusterExtension names no channel: every bundle of the package, upgraded
		// along every channel's edges.
		return c.compareStarts(ctx, op, np, "", slices.Sorted(maps.Keys(op.Bundles)), false, "")
	}
	return nil
}

func (c *comparer) compareChannel(ctx context.Context, op, np *index.Package, och, nch *index.Channel) error {
	pkg, name := op.Name, och.Name
	for _, b := range slices.Sorted(maps.Keys(union(entrySet(och), entrySet(nch)))) {
		switch {
		case nch.Entry(b) == nil:
			c.add(Change{Kind: BundleRemoved, Package: pkg, Channel: name, Bundle: b, Message: fmt.Sprintf("bundle %s removed from channel %s", b, name)})
		case och.Entry(b) == nil:
			c.add(Change{Kind: BundleAdded, Package: pkg, Channel: name, Bundle: b, Message: fmt.Sprintf("bundle %s added to channel %s", b, name)})
		}
	}
	oldEdges, newEdges := edgeSet(och), edgeSet(nch)
	for _, e := range sortedEdges(union(oldEdges, newEdges)) {
		switch {
		case !newEdges[e]:
			c.add(Change{Kind: EdgeRemoved, Package: pkg, Channel: name, Bundle: e.To, Edge: e.Kind, From: e.From, To: e.To, Message: fmt.Sprintf("edge removed in channel %s: %s", name, describe(e))})
		case !oldEdges[e]:
			c.add(Change{Kind: EdgeAdded, Package: pkg, Channel: name, Bundle: e.To, Edge: e.Kind, From: e.From, To: e.To, Message: fmt.Sprintf("edge added in channel %s: %s", name, describe(e))})
		}
	}
	oh, nh := och.Head(), nch.Head()
	ov, nv := op.Version(oh), np.Version(nh)
	lowered := ov != nil && nv != nil && nv.LT(*ov)
	if oh != nh {
		ch := Change{Kind: HeadMoved, Package: pkg, Channel: name, From: oh, To: nh, Message: fmt.Sprintf("head of channel %s moved %s -> %s", name, oh, nh)}
		if lowered {
			ch.Kind, ch.Breaking = HeadLowered, true
			ch.Message = fmt.Sprintf("head of channel %s moved down, %s (%s) -> %s (%s): users on %s have nothing to upgrade to and %s never downgrades", name, oh, ov, nh, nv, oh, c.w.OLM)
		}
		c.add(ch)
	}
	return c.compareStarts(ctx, op, np, name, och.EntryNames(), lowered, oh)
}

// compareStarts asks where every bundle a user may have installed from the old catalog goes,
// through the old catalog and through the new: those of channel, or with channel "" (OLM v1) of
// the package, for a ClusterExtension naming no channel. A start that reached the head before
// and not now is stranded; one that stops lower lands lower; the rest stopped short already.
// lowered says the channel's head moved down, which users on the old head, oh, already hear of.
func (c *comparer) compareStarts(ctx context.Context, op, np *index.Package, channel string, bundles []string, lowered bool, oh string) error {
	pkg := op.Name
	where := "in channel " + channel
	if channel == "" {
		where = "in any channel"
	}
	for _, b := range bundles {
		before, after, ok, err := c.j.Outcomes(ctx, pkg, channel, b)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		what := "users on it"
		if np.Bundles[b] == nil || channel != "" && np.Channels[channel] != nil && np.Channels[channel].Entry(b) == nil {
			what = "it is removed, and users on it"
		}
		ch := Change{Package: pkg, Channel: channel, Bundle: b, Breaking: true}
		switch {
		case after.Result == predict.AtHead:
			continue
		case before.Result == predict.AtHead && lowered && b == oh:
			// The old head above a lowered one is the head-lowered change already.
			continue
		case before.Result == predict.AtHead && after.Result == predict.Stranded && after.End == before.End && after.HeadVersion != nil && after.EndVersion != nil && after.HeadVersion.LT(*after.EndVersion):
			// Users stay where they were, now above the head: the head moved down under them,
			// which OLM v1's latest does when the bundles above it are deprecated.
			ch.Kind = HeadLowered
			ch.Message = fmt.Sprintf("%s %s: the %s moved down to %s (%s); users on %s keep it, with nothing to upgrade to: %s never downgrades", b, where, c.w.Head, after.Head, after.HeadVersion, b, c.w.OLM)
		case before.Result == predict.AtHead:
			ch.Kind = Stranded
			ch.Message = fmt.Sprintf("%s %s: %s reached the %s %s and are now stranded at %s: %s", b, where, what, c.w.Head, before.End, after.End, after.Why)
		case after.EndVersion != nil && before.EndVersion != nil && after.EndVersion.LT(*before.EndVersion):
			ch.Kind = LandsLower
			ch.Message = fmt.Sprintf("%s %s: %s took %s to %s and now stops lower, at %s: %s", b, where, c.w.OLM, what, before.End, after.End, after.Why)
		default:
			ch.Kind, ch.Breaking = AlreadyStranded, false
			ch.Message = fmt.Sprintf("%s %s: already stranded before this change, at %s: %s", b, where, before.End, before.Why)
			if after.End != before.End || after.Why != before.Why {
				ch.Message += fmt.Sprintf("; now at %s: %s", after.End, after.Why)
			}
			c.AlreadyBroken = append(c.AlreadyBroken, ch)
			continue
		}
		c.add(ch)
	}
	return nil
}

// Changed lists the packages whose content differs between the catalogs and, when dependencies
// are followed (OLM v0; OLM v1 resolves none), every package whose resolution can read a changed one
// (index.Dependencies). Any other package gets the same answers from OLM in both catalogs: the
// catalogs that provide dependencies, and the installed operators, are the same for both.
func Changed(o, n *index.Catalog, followDependencies bool) map[string]bool {
	changed := map[string]bool{}
	for _, p := range append(o.Packages(), n.Packages()...) {
		if _, seen := changed[p.Name]; !seen {
			op, np := o.Package(p.Name), n.Package(p.Name)
			changed[p.Name] = op == nil || np == nil || fingerprint(op) != fingerprint(np)
		}
	}
	if followDependencies {
		for pkg := range index.Dependencies(o, n).Dependents(changed) {
			changed[pkg] = true
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
