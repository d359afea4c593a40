package olmv0

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	"github.com/operator-framework/operator-registry/pkg/api"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// step describes the upgrade of the package's operator in prev to the one OLM installed in
// next: the edge, the candidates passed over, the deprecations.
func (s *Simulator) step(ctx context.Context, tc *loaded, ch *index.Channel, prev, next []operator) (Step, error) {
	installed, to := prev[0], next[0]
	st := Step{From: installed.CSV, To: to.CSV, Version: to.Version.String()}
	if e := ch.Entry(to.CSV); e != nil {
		st.Edges = e.Rule.Kinds(installed.CSV, &installed.Version)
		if len(st.Edges) > 0 {
			st.Edge = st.Edges[0]
		}
		if st.Edge == upgrade.SkipRange {
			st.SkipRange = e.Decl.SkipRange
		}
	}
	// The resolver's result carries no deprecations: OLM's subscription reconciler reads them
	// from the catalog's entry, and so does this.
	found, err := s.resolver.Find(tc.Name, ch.Package, cache.CSVNamePredicate(to.CSV), cache.ChannelPredicate(ch.Name))
	if err != nil {
		return st, err
	}
	for _, e := range found {
		if d := e.SourceInfo.Deprecations; d != nil {
			for _, m := range []*api.Deprecation{d.Package, d.Channel, d.Bundle} {
				if m != nil {
					st.Deprecations = append(st.Deprecations, m.GetMessage())
				}
			}
		}
	}
	order := ch.Order()
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	cands, err := s.resolver.Candidates(tc.Name, ch.Package, ch.Name, installed.Operator)
	if err != nil {
		return st, err
	}
	for _, cand := range cands {
		if cand.Name == to.CSV {
			continue
		}
		p := Passed{Bundle: cand.Name, Version: cand.Version.String()}
		if e := ch.Entry(cand.Name); e != nil {
			p.Edge, _ = e.Rule.From(installed.CSV, &installed.Version)
		}
		switch skippers := ch.SkippedBy(cand.Name); {
		case len(skippers) > 0:
			p.Why = fmt.Sprintf("skipped by %s: OLM leaves skipped bundles out of the channel order, so it never upgrades to one", strings.Join(skippers, ", "))
		case rank(cand.Name) > rank(to.CSV):
			p.Why = fmt.Sprintf("further from the head than %s: OLM prefers the candidate nearest the channel head", to.CSV)
		default:
			why, err := s.whyNot(ctx, tc.Name, prev, cand)
			if err != nil {
				return st, err
			}
			p.Why = "nearer the head, but OLM cannot install it: " + why
		}
		st.Passed = append(st.Passed, p)
	}
	return st, nil
}

// stranded says why OLM keeps the package's operator of ns although it is not the head.
func (s *Simulator) stranded(ctx context.Context, tc *loaded, ch *index.Channel, ns []operator) (string, error) {
	end := ns[0]
	cands, err := s.resolver.Candidates(tc.Name, ch.Package, ch.Name, end.Operator)
	if err != nil {
		return "", err
	}
	if len(cands) == 0 {
		return fmt.Sprintf("no bundle of channel %q replaces or skips %s, and no skipRange contains %s: OLM keeps %s installed", ch.Name, end.CSV, end.Version, end.CSV), nil
	}
	var names []string
	for _, c := range cands {
		names = append(names, c.Name)
		if len(ch.SkippedBy(c.Name)) == 0 {
			why, err := s.whyNot(ctx, tc.Name, ns, c)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("OLM cannot install %s, which can replace %s: %s", c.Name, end.CSV, why), nil
		}
	}
	return fmt.Sprintf("the only bundles that replace %s (%s) are skipped by others, and OLM never upgrades to a skipped bundle: OLM keeps %s installed", end.CSV, strings.Join(names, ", "), end.CSV), nil
}

// whyNot asks OLM why it does not install cand in place of the package's operator of ns: it
// resolves the namespace as if cand were installed, and OLM's refusal says what cand lacks (a
// dependency nothing provides, a deprecated property, a conflict with an installed operator).
func (s *Simulator) whyNot(ctx context.Context, target string, ns []operator, cand *cache.Entry) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	// Installed without a Subscription, the CSV must stay: OLM cannot pass it over for another
	// candidate, and says what keeps it from being installed.
	as := append([]operator(nil), ns...)
	as[0] = newOperator(olmresolver.Operator{CSV: cand.Name, Version: *cand.Version, Properties: cand.Properties}, cand.SourceInfo.Catalog.Name)
	res, err := s.resolve(target, as)
	if err != nil {
		return "", err
	}
	if res.failed != nil {
		return res.failed.Message, nil
	}
	return "OLM's resolver accepts it alone, yet its solver keeps what is installed", nil
}
