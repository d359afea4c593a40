package olmv0

import (
	"context"
	"fmt"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
)

// Source is one CatalogSource: the versions of its catalog, of which a cluster serves one at a
// time, as a catalog before and after a change, or per OpenShift minor. A resolution against one
// version sees neither the others nor what only they provide.
type Source []predict.Catalog

// Catalogs are the cluster's catalogs read, their models built, and not yet served.
type Catalogs struct {
	catalogs []*loaded
	configs  map[string]*declcfg.DeclarativeConfig
	cluster  *predict.Cluster
}

// New serves the catalogs, each a CatalogSource of its own, every package of them. A catalog
// with load problems is refused with every problem, as `csi-olm catalog validate` reports them.
func New(ctx context.Context, catalogs ...predict.Catalog) (*Simulator, error) {
	sources := make([]Source, len(catalogs))
	for i, c := range catalogs {
		sources[i] = Source{c}
	}
	l, err := Load(ctx, nil, sources...)
	if err != nil {
		return nil, err
	}
	return l.Serve(ctx, nil)
}

// Load reads the sources' catalogs and, after them, the cluster's (nil for none), each of those
// a CatalogSource of its own, and builds their models.
func Load(ctx context.Context, cluster *predict.Cluster, sources ...Source) (*Catalogs, error) {
	l := &Catalogs{configs: map[string]*declcfg.DeclarativeConfig{}, cluster: cluster}
	if cluster != nil {
		for _, c := range cluster.Catalogs {
			sources = append(sources, Source{c})
		}
	}
	names := map[string]bool{}
	for n, src := range sources {
		for _, c := range src {
			if names[c.Name] {
				return nil, fmt.Errorf("two catalogs are named %q: name them apart", c.Name)
			}
			names[c.Name] = true
			if c.Registry != nil {
				// The catalog is read from the registry, and OLM's resolver reads it again: one
				// listing of its bundles serves both.
				c.Registry = load.ListedOnce(c.Registry)
			}
			cfg, err := c.Read(ctx)
			if err != nil {
				return nil, err
			}
			l.catalogs = append(l.catalogs, &loaded{Catalog: c, idx: index.New(cfg), source: n})
			l.configs[c.Name] = cfg
		}
	}
	return l, nil
}

// Index is a catalog's model, nil for a name not loaded.
func (l *Catalogs) Index(catalog string) *index.Catalog {
	for _, c := range l.catalogs {
		if c.Name == catalog {
			return c.idx
		}
	}
	return nil
}

// Serve serves, of each catalog, the packages of roots, the installed operators' and those they
// can reach through dependencies in any of the catalogs: OLM's answers for those packages do not
// depend on the others, and building a registry's cache is most of a simulation's time on a large
// catalog. Nil roots serve every package. The Simulator reads the cluster's installed operators
// from what it serves.
func (l *Catalogs) Serve(ctx context.Context, roots []string) (*Simulator, error) {
	s := &Simulator{catalogs: map[string]*loaded{}, memo: map[string]resolution{}, providers: map[string]meeting{}}
	var packages map[string]bool
	if roots != nil {
		if l.cluster != nil {
			for _, p := range l.cluster.Packages {
				roots = append(roots, p.Name)
			}
		}
		indexes := make([]*index.Catalog, len(l.catalogs))
		for i, c := range l.catalogs {
			indexes[i] = c.idx
		}
		packages = index.Dependencies(indexes...).Reach(roots)
	}
	var sources []olmresolver.Source
	for _, c := range l.catalogs {
		s.catalogs[c.Name] = c
		client := c.Registry
		if client == nil {
			srv, err := load.Serve(ctx, c.FS, l.configs[c.Name], packages)
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("serving %s: %w", c.Dir, err)
			}
			s.close = append(s.close, srv.Close)
			client = srv.Client
		}
		sources = append(sources, olmresolver.Source{Name: c.Name, Priority: c.Priority, Client: client})
	}
	r, err := olmresolver.New(sources...)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.resolver = r
	if l.cluster != nil {
		if s.existing, err = s.installed(l.catalogs, l.cluster); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Existing are the cluster's installed operators, which every start has beside its own.
func (s *Simulator) Existing() []Existing { return s.existing }

// installed is the cluster's installed operators. A package@version that a catalog carries,
// the first by the order catalogs were given in, is that bundle as installed, with the APIs it provides and requires; any other is an
// operator with only that package.
func (s *Simulator) installed(catalogs []*loaded, cluster *predict.Cluster) ([]Existing, error) {
	var out []Existing
	for _, p := range cluster.Packages {
		found := false
		for _, c := range catalogs {
			entries, err := s.resolver.Find(c.Name, p.Name, cache.PkgPredicate(p.Name), cache.VersionInRangePredicate(semverExactly(p.Version), p.Version.String()))
			if err != nil {
				return nil, err
			}
			if len(entries) > 0 {
				e := entries[0]
				out = append(out, Existing{Operator: olmresolver.Operator{CSV: e.Name, Version: *e.Version, Properties: e.Properties}, From: c.Name})
				found = true
				break
			}
		}
		if !found {
			out = append(out, Existing{Operator: packageProvider(p.Name, p.Version), From: "given"})
		}
	}
	for _, g := range cluster.APIs {
		out = append(out, Existing{Operator: apiProvider(g.Group, g.Version, g.Kind), From: "given"})
	}
	return out, nil
}

func semverExactly(v semver.Version) semver.Range {
	return func(other semver.Version) bool { return other.Equals(v) }
}
