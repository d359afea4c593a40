package validation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// The rules that the field's catalog pipelines run (docs/catalogs.md#rules maps each to its
// check), in their forms for a file-based catalog.

// skipRangeWithoutReplaces finds the entries of a channel of several that have a skipRange and
// no replaces: only the range's bundles upgrade to the entry, and the replaces chain ends at it.
func (idx *catalogIndex) skipRangeWithoutReplaces(ch *index.Channel) []Problem {
	if len(ch.Entries) < 2 {
		return nil
	}
	var problems []Problem
	for _, e := range ch.Entries {
		if e.Decl.SkipRange != "" && e.Decl.Replaces == "" {
			problems = append(problems, idx.channelProblem(ch, Warning, RuleSkipRangeWithoutReplace, e.Name,
				"has skipRange %q and no replaces: the replaces chain ends at it, so bundles of the channel outside the range have no edge to it (a pruned graph)", e.Decl.SkipRange))
		}
	}
	return problems
}

// edgeLoops finds the bundles of a channel that lead round to each other through upgrade edges
// with a skips or skipRange among them (a loop of replaces alone is RuleReplacesLoop's). A
// bundle whose skipRange holds its own version is no loop: OLM keeps such an install where it
// is. Whether OLM goes round the others depends on which edge it prefers at each bundle, which
// `catalog simulate` answers, so they are warnings.
func (idx *catalogIndex) edgeLoops(ch *index.Channel) []Problem {
	next := map[string][]string{}
	kinds := map[[2]string][]upgrade.Kind{}
	for _, to := range ch.Entries {
		for _, from := range ch.Entries {
			if from == to {
				continue
			}
			if k := to.Rule.Kinds(from.Name, from.Version); len(k) > 0 {
				next[from.Name] = append(next[from.Name], to.Name)
				kinds[[2]string{from.Name, to.Name}] = k
			}
		}
	}
	var problems []Problem
	for _, scc := range stronglyConnected(ch, next) {
		if len(scc) < 2 {
			continue
		}
		replacesOnly := true
		var edges []string
		for _, from := range scc {
			for _, to := range next[from] {
				if !slices.Contains(scc, to) {
					continue
				}
				k := kinds[[2]string{from, to}]
				if !slices.Equal(k, []upgrade.Kind{upgrade.Replaces}) {
					replacesOnly = false
				}
				edges = append(edges, fmt.Sprintf("%s -> %s (%s)", from, to, joinKinds(k)))
			}
		}
		if replacesOnly {
			continue
		}
		problems = append(problems, idx.channelProblem(ch, Warning, RuleEdgeLoop, scc[0],
			"bundles %s lead round to each other: %s; an install among them never reaches the head if OLM takes these edges (catalog simulate says whether it does)",
			strings.Join(scc, ", "), strings.Join(edges, ", ")))
	}
	return problems
}

func joinKinds(kinds []upgrade.Kind) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// stronglyConnected is Tarjan's algorithm over the channel's entries, in their declared order,
// with each component's names in that order too, so that reports are stable.
func stronglyConnected(ch *index.Channel, next map[string][]string) [][]string {
	order := map[string]int{}
	for i, e := range ch.Entries {
		order[e.Name] = i
	}
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range next[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var scc []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			scc = append(scc, w)
			if w == v {
				break
			}
		}
		slices.SortFunc(scc, func(a, b string) int { return order[a] - order[b] })
		out = append(out, scc)
	}
	for _, e := range ch.Entries {
		if _, seen := index[e.Name]; !seen {
			visit(e.Name)
		}
	}
	return out
}

// digestPinned is an image reference by sha256 digest, as Konflux's check matches it.
var digestPinned = regexp.MustCompile(`@sha256:[a-fA-F0-9]{64}$`)

// bundleImages checks every bundle's image: pinned by digest, and under one of the allowed
// registry prefixes when any are given (a plain prefix match, as the pipelines do).
func (idx *catalogIndex) bundleImages(allowed []string, settings map[string]Setting) []Problem {
	digest, registry := enabled(RuleBundleImageDigest, settings), len(allowed) > 0 && enabled(RuleBundleImageRegistry, settings)
	if !digest && !registry {
		return nil
	}
	var problems []Problem
	for _, p := range idx.m.Packages() {
		for _, name := range slices.Sorted(maps.Keys(p.Bundles)) {
			b := p.Bundles[name].Decl
			if b.Image == "" {
				continue
			}
			add := func(rule, format string, args ...any) {
				problems = append(problems, Problem{File: idx.c.file(declcfg.SchemaBundle, p.Name, name), Level: Error, Rule: rule,
					Package: p.Name, Bundle: name, Message: fmt.Sprintf(format, args...)})
			}
			if digest && !digestPinned.MatchString(b.Image) {
				add(RuleBundleImageDigest, "image %s is not pinned by digest (@sha256:...): what it installs can change under the catalog", b.Image)
			}
			if registry && !slices.ContainsFunc(allowed, func(prefix string) bool { return strings.HasPrefix(b.Image, prefix) }) {
				add(RuleBundleImageRegistry, "image %s is under none of the allowed registries (%s)", b.Image, strings.Join(allowed, ", "))
			}
		}
	}
	return problems
}

// networkPolicies finds bundles that embed a NetworkPolicy, which the operator pipelines refuse
// although OLM installs it (the EFS operator's bundles carry one, installed by OLM in the
// end-to-end tests), so the rule is off unless turned on. Only embedded objects
// (olm.bundle.object) can be checked; a published bundle's are in its image.
func (idx *catalogIndex) networkPolicies() []Problem {
	var problems []Problem
	for _, p := range idx.m.Packages() {
		for _, name := range slices.Sorted(maps.Keys(p.Bundles)) {
			embedded, err := embeddedManifests(p.Bundles[name].Decl.Properties)
			if err != nil {
				continue // reported by opm's rules
			}
			for _, key := range slices.Sorted(maps.Keys(embedded)) {
				obj := embedded[key]
				apiVersion, _ := obj["apiVersion"].(string)
				if obj["kind"] == "NetworkPolicy" && strings.HasPrefix(apiVersion, "networking.k8s.io/") {
					problems = append(problems, Problem{File: idx.c.file(declcfg.SchemaBundle, p.Name, name), Level: Error, Rule: RuleNetworkPolicy,
						Package: p.Name, Bundle: name, Message: fmt.Sprintf("embeds %s, which the operator pipelines refuse in a bundle (OLM installs it)", key)})
				}
			}
		}
	}
	return problems
}
