// Package upgrade is the one statement of OLM's upgrade-edge rule: a bundle upgrades from another
// when it replaces it, skips it, or its olm.skipRange contains the other's version. The bundle
// definitions, the catalog checks, the graph drawings and the upgrade walk of `catalog simulate`
// and `migrate subscription` all ask it, so they cannot disagree on what an edge is.
package upgrade

import (
	"fmt"
	"slices"

	"github.com/blang/semver/v4"
)

// Kind is the field an edge comes from. Its values are the fields' names, which the graph
// drawings and the upgrade walk's explanations print.
type Kind string

const (
	Replaces  Kind = "replaces"
	Skips     Kind = "skips"
	SkipRange Kind = "skipRange"
)

// Edges are what a bundle declares it upgrades from: its olm.channel entry's replaces and skips,
// and its olm.skipRange.
type Edges struct {
	Replaces  string
	Skips     []string
	SkipRange string
}

// Rule is Edges ready to be asked, with the skipRange parsed once.
type Rule struct {
	Edges
	inRange semver.Range
}

// Compile parses the skipRange. An unparsable one is an error for the caller to report; the Rule
// returned is usable all the same, with a skipRange that contains nothing, as OLM treats it.
func (e Edges) Compile() (Rule, error) {
	r := Rule{Edges: e}
	if e.SkipRange == "" {
		return r, nil
	}
	inRange, err := semver.ParseRange(e.SkipRange)
	if err != nil {
		return r, fmt.Errorf("skipRange %q does not parse: %w", e.SkipRange, err)
	}
	r.inRange = inRange
	return r, nil
}

// Named lists the bundles the edges name: the skipped ones, then the replaced one.
func (e Edges) Named() []string {
	named := slices.Clone(e.Skips)
	if e.Replaces != "" {
		named = append(named, e.Replaces)
	}
	return named
}

// InRange reports whether the skipRange contains v.
func (r Rule) InRange(v semver.Version) bool { return r.inRange != nil && r.inRange(v) }

// From reports whether a bundle with these edges upgrades from the bundle name, whose version is
// v (nil when unknown, which only the skipRange needs), and through which field: replaces first,
// then skips, then skipRange.
func (r Rule) From(name string, v *semver.Version) (Kind, bool) {
	if kinds := r.Kinds(name, v); len(kinds) > 0 {
		return kinds[0], true
	}
	return "", false
}

// Kinds lists every field through which a bundle with these edges upgrades from the bundle name,
// in From's order.
func (r Rule) Kinds(name string, v *semver.Version) []Kind {
	var out []Kind
	if r.Replaces == name {
		out = append(out, Replaces)
	}
	if slices.Contains(r.Skips, name) {
		out = append(out, Skips)
	}
	if v != nil && r.InRange(*v) {
		out = append(out, SkipRange)
	}
	return out
}
