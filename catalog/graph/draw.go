package graph

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DOT renders a package graph for Graphviz: channels are clusters, the head is bold, foreign
// nodes are dashed; replaces edges are solid, skips dashed, skipRange dotted.
func DOT(g Package) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n", g.title())
	b.WriteString("  rankdir=LR;\n  labelloc=t;\n")
	fmt.Fprintf(&b, "  label=%q;\n", g.title()+" upgrade graph")
	b.WriteString("  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	for i, ch := range g.Channels {
		fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%q;\n    labelloc=b;\n", i, ch.label())
		for _, n := range ch.Nodes {
			style, label := "rounded", n.Label
			if n.Head {
				style, label = "rounded,bold", label+"\nhead"
			}
			b.WriteString("    " + dotNode(n.ID, label, style, n.Head, g.NodeMarks))
		}
		b.WriteString("  }\n")
	}
	for _, n := range g.Foreign {
		b.WriteString("  " + dotNode(n.ID, n.Label, "rounded,dashed", false, g.NodeMarks))
	}
	style := map[EdgeKind]string{Replaces: "solid", Skips: "dashed", SkipRange: "dotted"}
	for _, e := range g.Edges {
		label, st, extra := string(e.Kind), style[e.Kind], ""
		if m, ok := g.EdgeMarks[e]; ok {
			label = strings.TrimSpace(label + " " + m.Note)
			if m.Dashed {
				st = "dashed"
			}
			extra = fmt.Sprintf(", color=%q, fontcolor=%q, penwidth=2.5", m.Color, m.Color)
		}
		fmt.Fprintf(&b, "  %q -> %q [label=%q, style=%s%s];\n", e.From, e.To, label, st, extra)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

// dotNode is one node statement, with its mark when it has one.
func dotNode(id, label, style string, head bool, marks map[string]Mark) string {
	m, ok := marks[id]
	if !ok {
		if head {
			return fmt.Sprintf("%q [label=%q, style=%q, penwidth=2.5];\n", id, label, style)
		}
		if style == "rounded" {
			return fmt.Sprintf("%q [label=%q];\n", id, label)
		}
		return fmt.Sprintf("%q [label=%q, style=%q];\n", id, label, style)
	}
	if m.Note != "" {
		label += "\n" + m.Note
	}
	if m.Dashed {
		style = "rounded,dashed"
	}
	return fmt.Sprintf("%q [label=%q, style=%q, color=%q, fontcolor=%q, penwidth=2.5];\n", id, label, style, m.Color, m.Color)
}

// Mermaid renders a package graph as a Mermaid flowchart, which Markdown viewers draw. It is not
// operator-registry's declcfg.WriteMermaidChannels, whose output for catalog/certified differs
// from the committed catalog/graphs/*.mmd in what readers of them rely on: it reads one catalog,
// so the community bundle 0.0.8 that stable replaces is drawn as a certified channel member and
// the skipRange edges from community 0.0.6 and 0.0.7 are missing; its nodes are bundle names, not
// versions, with no head marked; and it draws every package in one untitled chart, where each
// package gets its own file named like its dot and svg.
func Mermaid(g Package) []byte {
	ids := map[string]string{}
	id := func(nodeID string) string {
		if _, ok := ids[nodeID]; !ok {
			ids[nodeID] = fmt.Sprintf("n%d", len(ids))
		}
		return ids[nodeID]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntitle: %s upgrade graph\n---\nflowchart LR\n", g.title())
	for i, ch := range g.Channels {
		fmt.Fprintf(&b, "  subgraph c%d[%q]\n", i, ch.label())
		for _, n := range ch.Nodes {
			if n.Head {
				fmt.Fprintf(&b, "    %s[%q]:::head\n", id(n.ID), n.Label+" (head)")
			} else {
				fmt.Fprintf(&b, "    %s[%q]\n", id(n.ID), n.Label)
			}
		}
		b.WriteString("  end\n")
	}
	for _, n := range g.Foreign {
		fmt.Fprintf(&b, "  %s[%q]:::foreign\n", id(n.ID), n.Label)
	}
	arrow := map[EdgeKind]string{Replaces: "-->", Skips: "-.->", SkipRange: "-.->"}
	var linkStyles []string
	for i, e := range g.Edges {
		label := string(e.Kind)
		if m, ok := g.EdgeMarks[e]; ok {
			label = strings.TrimSpace(label + " " + m.Note)
			linkStyles = append(linkStyles, fmt.Sprintf("  linkStyle %d stroke:%s,stroke-width:3px\n", i, m.Color))
		}
		fmt.Fprintf(&b, "  %s %s|%s| %s\n", id(e.From), arrow[e.Kind], label, id(e.To))
	}
	b.WriteString("  classDef head stroke-width:3px,font-weight:bold\n  classDef foreign stroke-dasharray:5 5\n")
	for _, l := range linkStyles {
		b.WriteString(l)
	}
	for _, nodeID := range slices.Sorted(maps.Keys(g.NodeMarks)) {
		if short, ok := ids[nodeID]; ok {
			m := g.NodeMarks[nodeID]
			dash := ""
			if m.Dashed {
				dash = ",stroke-dasharray:5 5"
			}
			fmt.Fprintf(&b, "  style %s stroke:%s,stroke-width:3px%s\n", short, m.Color, dash)
		}
	}
	return []byte(b.String())
}

func (ch Channel) label() string {
	if ch.Default {
		return "channel " + ch.Name + " (default)"
	}
	return "channel " + ch.Name
}
