package olmv0

import (
	"fmt"
	"strings"

	"github.com/csi-olm/csi-olm/catalog/graph"
	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/predict"
)

// Text renders paths for people: each step with its edge, the candidates passed over and why,
// and where OLM stops.
func Text(paths []*Path) string {
	var b strings.Builder
	for i, p := range paths {
		if i > 0 {
			b.WriteString("\n")
		}
		title := fmt.Sprintf("%s: package %s, channel %s (head %s)", p.Catalog, p.Package, p.Channel, p.Head)
		if p.Subscription != "" {
			title = "Subscription " + p.Subscription + " -> " + title
		}
		b.WriteString(title + "\n")
		fmt.Fprintf(&b, "  installed  %s (%s, from %s)\n", p.Start.Name, p.Start.Version, p.Start.Catalog)
		for _, pr := range p.Providers {
			fmt.Fprintf(&b, "  beside it  %s\n", pr)
		}
		shown := map[string]bool{}
		for n, st := range p.Steps {
			fmt.Fprintf(&b, "  %d. %s (%s) by %s\n", n+1, st.To, st.Version, st.By())
			for _, c := range st.Passed {
				fmt.Fprintf(&b, "       not %s (%s, %s): %s\n", c.Bundle, c.Version, c.Edge, c.Why)
			}
			// A package's deprecation applies to every step: it is said once.
			for _, d := range st.Deprecations {
				if !shown[d] {
					shown[d] = true
					fmt.Fprintf(&b, "       deprecated: %s\n", d)
				}
			}
		}
		for _, d := range p.Dependencies {
			what := "installs"
			if d.Replaces != "" {
				what = "upgrades " + d.Replaces + " to"
			}
			fmt.Fprintf(&b, "  with %s, OLM %s %s (%s, package %s, from %s), a dependency\n", d.With, what, d.CSV, d.Version, d.Package, d.Catalog)
		}
		switch p.Result {
		case predict.AtHead:
			fmt.Fprintf(&b, "  OLM settles on %s, the channel head.\n", p.End)
		case predict.Stranded:
			fmt.Fprintf(&b, "  OLM stops at %s, short of the head %s: %s.\n", p.End, p.Head, p.Stranded)
		case predict.Unresolvable:
			fmt.Fprintf(&b, "  OLM cannot resolve the Subscription on %s: ResolutionFailed (%s): %s\n", p.End, p.ResolutionFailed.Reason, p.ResolutionFailed.Message)
		case predict.Loops:
			fmt.Fprintf(&b, "  %s.\n", p.Why())
		}
	}
	return b.String()
}

func joinKinds[K ~string](kinds []K) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Picture is the package's upgrade graph in the path's catalog, with the path marked: the
// installed CSV, and each step's edge numbered.
func (s *Simulator) Picture(p *Path) (*graph.Package, error) {
	tc := s.catalogs[p.Catalog]
	foreign := p.Start.Catalog != p.Catalog
	var from *index.Catalog
	if fc := s.catalogs[p.Start.Catalog]; foreign && fc != nil {
		from = fc.idx
	}
	var g *graph.Package
	for _, pkg := range graph.Build(p.Catalog, tc.idx, from) {
		if pkg.Name == p.Package {
			g = &pkg
		}
	}
	if g == nil {
		return nil, fmt.Errorf("package %q is not in catalog %s", p.Package, tc.Dir)
	}
	const color = "#1f6feb"
	id := func(bundle string) string {
		if n := graph.NodeID(p.Channel, bundle); g.HasNode(n) && !(foreign && bundle == p.Start.Name) {
			return n
		}
		n := graph.ForeignNodeID(bundle)
		if !g.HasNode(n) {
			g.Foreign = append(g.Foreign, graph.Node{ID: n, Label: bundle, Foreign: true})
		}
		return n
	}
	g.MarkNode(id(p.Start.Name), graph.Mark{Color: color, Note: "installed"})
	for n, st := range p.Steps {
		note := fmt.Sprintf("step %d", n+1)
		g.MarkNode(id(st.To), graph.Mark{Color: color, Note: note})
		g.MarkEdge(graph.Edge{From: id(st.From), To: id(st.To), Kind: st.Edge}, graph.Mark{Color: color, Note: note})
	}
	return g, nil
}
