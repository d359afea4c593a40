package diff

import (
	"fmt"
	"slices"

	"github.com/csi-olm/csi-olm/catalog/graph"
	"github.com/csi-olm/csi-olm/catalog/index"
)

var (
	added   = graph.Mark{Color: "#1a7f37", Note: "added"}
	removed = graph.Mark{Color: "#cf222e", Note: "removed", Dashed: true}
)

// Picture is a package's upgrade graph in the new catalog with what the old one had and the new
// lacks put back, marked removed, and what only the new one has marked added.
func Picture(pkg string, oldCatalog, newCatalog *index.Catalog) (*graph.Package, error) {
	o, n := buildOne(pkg, oldCatalog), buildOne(pkg, newCatalog)
	switch {
	case o == nil && n == nil:
		return nil, fmt.Errorf("package %q is in neither catalog", pkg)
	case n == nil:
		return markAll(o, removed), nil
	case o == nil:
		return markAll(n, added), nil
	}
	g := n
	oldIDs := map[string]bool{}
	for _, och := range o.Channels {
		i := slices.IndexFunc(g.Channels, func(c graph.Channel) bool { return c.Name == och.Name })
		if i < 0 {
			och.Default = false
			g.Channels = append(g.Channels, och)
			i = len(g.Channels) - 1
			for _, node := range och.Nodes {
				oldIDs[node.ID] = true
				g.MarkNode(node.ID, removed)
			}
			continue
		}
		for _, node := range och.Nodes {
			oldIDs[node.ID] = true
			if !g.HasNode(node.ID) {
				node.Head = false
				g.Channels[i].Nodes = append(g.Channels[i].Nodes, node)
				g.MarkNode(node.ID, removed)
			}
		}
	}
	for _, ch := range g.Channels {
		for _, node := range ch.Nodes {
			if !oldIDs[node.ID] {
				g.MarkNode(node.ID, added)
			}
		}
	}
	for _, e := range o.Edges {
		if !slices.Contains(n.Edges, e) {
			g.MarkEdge(e, removed)
		}
	}
	for _, e := range n.Edges {
		if !slices.Contains(o.Edges, e) {
			g.MarkEdge(e, added)
		}
	}
	return g, nil
}

func buildOne(pkg string, c *index.Catalog) *graph.Package {
	for _, p := range graph.Build("diff", c, nil) {
		if p.Name == pkg {
			return &p
		}
	}
	return nil
}

func markAll(g *graph.Package, m graph.Mark) *graph.Package {
	for _, ch := range g.Channels {
		for _, node := range ch.Nodes {
			g.MarkNode(node.ID, m)
		}
	}
	for _, e := range g.Edges {
		g.MarkEdge(e, m)
	}
	return g
}
