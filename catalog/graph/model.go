// Package graph is the `csi-olm catalog graph` verb: it draws each package's upgrade graph, per
// channel, as DOT or Mermaid, and as SVG or PNG through Graphviz.
package graph

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// EdgeKind is how an upgrade edge is declared.
type EdgeKind = upgrade.Kind

const (
	Replaces  = upgrade.Replaces
	Skips     = upgrade.Skips
	SkipRange = upgrade.SkipRange
)

// Node is a bundle in a channel, or a bundle outside the catalog that an edge comes from.
type Node struct {
	ID      string
	Label   string
	Head    bool
	Foreign bool
}

// Edge is an upgrade from one node to another.
type Edge struct {
	From, To string
	Kind     EdgeKind
}

// Channel is one channel's nodes.
type Channel struct {
	Name    string
	Default bool
	Nodes   []Node
}

// Package is the graph of one package: its channels, the foreign nodes edges come from, and
// every edge.
type Package struct {
	Catalog  string
	Name     string
	Channels []Channel
	Foreign  []Node
	Edges    []Edge
	// NodeMarks and EdgeMarks highlight what a drawing is about: a simulated upgrade path, or a
	// diff's changes. Nodes are marked by ID.
	NodeMarks map[string]Mark
	EdgeMarks map[Edge]Mark
}

// Mark highlights a node or an edge: a colour, a note added to its label, and dashed lines for
// what is gone.
type Mark struct {
	Color  string
	Note   string
	Dashed bool
}

// NodeID is the ID Build gives a bundle of a channel.
func NodeID(channel, bundle string) string { return channel + "/" + bundle }

// ForeignNodeID is the ID Build gives a bundle outside the catalog that an edge comes from.
func ForeignNodeID(bundle string) string { return "foreign/" + bundle }

// MarkNode records a node's mark.
func (g *Package) MarkNode(id string, m Mark) {
	if g.NodeMarks == nil {
		g.NodeMarks = map[string]Mark{}
	}
	g.NodeMarks[id] = m
}

// MarkEdge records an edge's mark, adding the edge when the graph lacks it.
func (g *Package) MarkEdge(e Edge, m Mark) {
	if g.EdgeMarks == nil {
		g.EdgeMarks = map[Edge]Mark{}
	}
	if !slices.Contains(g.Edges, e) {
		g.Edges = append(g.Edges, e)
	}
	g.EdgeMarks[e] = m
}

// HasNode reports whether the graph draws a node.
func (g *Package) HasNode(id string) bool {
	for _, ch := range g.Channels {
		for _, n := range ch.Nodes {
			if n.ID == id {
				return true
			}
		}
	}
	for _, n := range g.Foreign {
		if n.ID == id {
			return true
		}
	}
	return false
}

// Build computes the upgrade graph of every package in c. Bundles of community, when given,
// appear as foreign nodes wherever an edge comes from them.
func Build(catalogName string, c, community *index.Catalog) []Package {
	var out []Package
	for _, p := range c.Packages() {
		if p.Decl == nil {
			continue
		}
		var foreignPkg *index.Package
		if community != nil {
			foreignPkg = community.Package(p.Name)
		}
		g := Package{Catalog: catalogName, Name: p.Name}
		foreign := map[string]Node{}
		for _, ch := range p.SortedChannels() {
			g.Channels = append(g.Channels, buildChannel(&g, ch, p.DefaultChannel(), foreignPkg, foreign))
		}
		for _, id := range slices.Sorted(maps.Keys(foreign)) {
			g.Foreign = append(g.Foreign, foreign[id])
		}
		out = append(out, g)
	}
	return out
}

func buildChannel(g *Package, ch *index.Channel, defaultChannel string, foreignPkg *index.Package, foreign map[string]Node) Channel {
	head := ch.Head()
	entries := slices.Clone(ch.Entries)
	sort.SliceStable(entries, func(i, j int) bool { return index.OrZero(entries[i].Version).LT(index.OrZero(entries[j].Version)) })
	c := Channel{Name: ch.Name, Default: ch.Name == defaultChannel}
	var foreignBundles []*index.Bundle
	if foreignPkg != nil {
		for _, name := range slices.Sorted(maps.Keys(foreignPkg.Bundles)) {
			foreignBundles = append(foreignBundles, foreignPkg.Bundles[name])
		}
	}
	nodeID := func(bundle string) string {
		if ch.Entry(bundle) != nil {
			return NodeID(ch.Name, bundle)
		}
		id := ForeignNodeID(bundle)
		if _, ok := foreign[id]; !ok {
			label := bundle
			if foreignPkg != nil {
				if v := foreignPkg.Version(bundle); v != nil {
					label = "community " + v.String()
				}
			}
			foreign[id] = Node{ID: id, Label: label, Foreign: true}
		}
		return id
	}
	for _, e := range entries {
		label := e.Name
		if e.Version != nil {
			label = e.Version.String()
		}
		to := NodeID(ch.Name, e.Name)
		c.Nodes = append(c.Nodes, Node{ID: to, Label: label, Head: e.Name == head})
		// Every edge the entry declares is drawn, a bundle both skipped and in the skipRange
		// twice, so that the picture shows the catalog as written; only the replaced bundle is
		// not drawn again for the range.
		if e.Decl.Replaces != "" {
			g.Edges = append(g.Edges, Edge{From: nodeID(e.Decl.Replaces), To: to, Kind: Replaces})
		}
		for _, s := range e.Decl.Skips {
			g.Edges = append(g.Edges, Edge{From: nodeID(s), To: to, Kind: Skips})
		}
		for _, other := range entries {
			if other.Version != nil && other.Name != e.Name && other.Name != e.Decl.Replaces && e.Rule.InRange(*other.Version) {
				g.Edges = append(g.Edges, Edge{From: nodeID(other.Name), To: to, Kind: SkipRange})
			}
		}
		for _, b := range foreignBundles {
			if b.Version != nil && b.Name != e.Decl.Replaces && ch.Entry(b.Name) == nil && e.Rule.InRange(*b.Version) {
				g.Edges = append(g.Edges, Edge{From: nodeID(b.Name), To: to, Kind: SkipRange})
			}
		}
	}
	return c
}

// title names a graph in its drawing.
func (g Package) title() string {
	return strings.TrimSpace(g.Catalog + " " + g.Name)
}
