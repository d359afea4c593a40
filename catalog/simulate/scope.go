package simulate

import (
	"github.com/csi-olm/csi-olm/catalog/index"
)

// reach is the roots and every package they can reach through the APIs and packages their
// bundles require, providers taken from any of the catalogs, as OLM resolves dependencies across
// all CatalogSources; nil (every package) when an olm.constraint, whose expression may name any
// package or API, is among them.
func reach(catalogs []*index.Catalog, roots []string) map[string]bool {
	providers := index.Providers(catalogs...)
	out := map[string]bool{}
	queue := []string{}
	add := func(pkg string) {
		if !out[pkg] {
			out[pkg] = true
			queue = append(queue, pkg)
		}
	}
	for _, pkg := range roots {
		add(pkg)
	}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, c := range catalogs {
			p := c.Package(pkg)
			if p == nil {
				continue
			}
			for _, b := range p.Bundles {
				req := b.Requires()
				if req.Constraints {
					return nil
				}
				for _, g := range req.GVKs {
					for _, provider := range providers[g] {
						add(provider)
					}
				}
				for _, dep := range req.Packages {
					add(dep)
				}
			}
		}
	}
	return out
}
