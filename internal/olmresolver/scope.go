package olmresolver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
)

// OLM's cache answers every lookup by testing every entry of every catalog, and its predicates
// decode each entry's properties anew on each test: on catalogs of the field's size (hundreds of
// bundles) that is nearly all of a resolution's time. A resolution only ever reaches the
// packages of the namespace's operators and, transitively, the packages that provide what they
// require: OLM makes solver variables for nothing else. So each resolution's snapshots hold
// those packages' entries only, and OLM answers exactly as over the whole catalogs.

// sharedSources are the catalogs' sources, each read once, and the dependencies between their
// packages: every lane of a Resolver cuts its snapshots from them.
type sharedSources struct {
	sources map[cache.SourceKey]*sharedSource

	mu   sync.Mutex
	deps *dependencyGraph
}

func newSharedSources(registry cache.SourceProvider, namespace string) *sharedSources {
	s := &sharedSources{sources: map[cache.SourceKey]*sharedSource{}}
	for k, src := range registry.Sources(namespace) {
		s.sources[k] = &sharedSource{inner: src}
	}
	return s
}

// scopedSources are one lane's view of the shared sources, each snapshot cut to the lane's
// current scope.
type scopedSources struct {
	shared  *sharedSources
	sources map[cache.SourceKey]*scopedSource

	mu     sync.Mutex
	scope  map[string]bool // nil: every package
	hidden []string
	// generation counts the scopes set, so that a source cuts its entries once per scope.
	generation int
}

func (s *sharedSources) lane() *scopedSources {
	l := &scopedSources{shared: s, sources: map[cache.SourceKey]*scopedSource{}}
	for k, src := range s.sources {
		l.sources[k] = &scopedSource{name: k.Name, shared: src, parent: l}
	}
	return l
}

// setScope serves the packages of scope (nil: all) of every catalog but the hidden ones.
func (s *scopedSources) setScope(scope map[string]bool, hidden ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scope, s.hidden = scope, hidden
	s.generation++
}

func (s *scopedSources) currentScope(catalog string) (scope map[string]bool, hidden bool, generation int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scope, slices.Contains(s.hidden, catalog), s.generation
}

// reach is the packages a resolution of the installed operators can reach; nil when an
// olm.constraint (which may name anything) or a requirement of a kind not read here is among
// them.
func (s *scopedSources) reach(installed []*cache.Entry) (map[string]bool, error) {
	g, err := s.shared.graph()
	if err != nil {
		return nil, err
	}
	scope := map[string]bool{}
	var queue []string
	add := func(pkg string) {
		if pkg != "" && !scope[pkg] {
			scope[pkg] = true
			queue = append(queue, pkg)
		}
	}
	for _, e := range installed {
		add(e.Package())
		n, err := needsOf(e.Properties)
		if err != nil {
			return nil, fmt.Errorf("installed CSV %s: %w", e.Name, err)
		}
		if n.anything {
			return nil, nil
		}
		for _, pkg := range g.providersOf(n) {
			add(pkg)
		}
	}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		n := g.needs[pkg]
		if n.anything {
			return nil, nil
		}
		for _, dep := range g.providersOf(n) {
			add(dep)
		}
	}
	return scope, nil
}

// graph reads every catalog once and records what each package's bundles provide and need.
func (s *sharedSources) graph() (*dependencyGraph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deps != nil {
		return s.deps, nil
	}
	g := &dependencyGraph{providers: map[property.GVK][]string{}, needs: map[string]needs{}}
	for key, src := range s.sources {
		entries, err := src.all()
		if err != nil {
			return nil, fmt.Errorf("reading catalog %s: %w", key.Name, err)
		}
		for _, e := range entries {
			pkg := e.Package()
			n, err := needsOf(e.Properties)
			if err != nil {
				return nil, fmt.Errorf("bundle %s of catalog %s: %w", e.Name, key.Name, err)
			}
			g.needs[pkg] = g.needs[pkg].merge(n)
			for _, p := range e.Properties {
				if p.Type != property.TypeGVK {
					continue
				}
				var gvk property.GVK
				if err := json.Unmarshal([]byte(p.Value), &gvk); err != nil {
					return nil, fmt.Errorf("bundle %s of catalog %s: olm.gvk %s: %w", e.Name, key.Name, p.Value, err)
				}
				if !slices.Contains(g.providers[gvk], pkg) {
					g.providers[gvk] = append(g.providers[gvk], pkg)
				}
			}
		}
	}
	s.deps = g
	return g, nil
}

type dependencyGraph struct {
	providers map[property.GVK][]string
	needs     map[string]needs
}

func (g *dependencyGraph) providersOf(n needs) []string {
	out := slices.Clone(n.packages)
	for _, gvk := range n.gvks {
		out = append(out, g.providers[gvk]...)
	}
	return out
}

// needs is what bundles require of other operators.
type needs struct {
	gvks     []property.GVK
	packages []string
	anything bool
}

// merge adds o's needs to n's, each once: a package's bundles mostly need the same, and a
// tree of per-minor catalogs has the same package in each minor.
func (n needs) merge(o needs) needs {
	out := needs{gvks: n.gvks, packages: n.packages, anything: n.anything || o.anything}
	for _, gvk := range o.gvks {
		if !slices.Contains(out.gvks, gvk) {
			out.gvks = append(out.gvks, gvk)
		}
	}
	for _, pkg := range o.packages {
		if !slices.Contains(out.packages, pkg) {
			out.packages = append(out.packages, pkg)
		}
	}
	return out
}

func needsOf(props []*api.Property) (needs, error) {
	var n needs
	for _, p := range props {
		switch p.Type {
		case property.TypeGVKRequired:
			var gvk property.GVKRequired
			if err := json.Unmarshal([]byte(p.Value), &gvk); err != nil {
				return n, fmt.Errorf("%s %s: %w", p.Type, p.Value, err)
			}
			n.gvks = append(n.gvks, property.GVK(gvk))
		case property.TypePackageRequired:
			var pkg property.PackageRequired
			if err := json.Unmarshal([]byte(p.Value), &pkg); err != nil {
				return n, fmt.Errorf("%s %s: %w", p.Type, p.Value, err)
			}
			n.packages = append(n.packages, pkg.PackageName)
		case property.TypeConstraint, "olm.label.required":
			n.anything = true
		}
	}
	return n, nil
}

// sharedSource is one catalog: the registry's snapshot, read once.
type sharedSource struct {
	inner   cache.Source
	once    sync.Once
	entries []*cache.Entry
	err     error
}

func (s *sharedSource) all() ([]*cache.Entry, error) {
	s.once.Do(func() {
		snap, err := s.inner.Snapshot(context.Background())
		if err != nil {
			s.err = err
			return
		}
		s.entries = snap.Entries
	})
	return s.entries, s.err
}

// scopedSource is one catalog in one lane, served cut to the lane's scope.
type scopedSource struct {
	name   string
	shared *sharedSource
	parent *scopedSources

	// cut are the entries of the scope of generation cutFor: OLM takes a snapshot of a source
	// for each lookup of a resolution, and the scope stays the same through it.
	cutMu  sync.Mutex
	cutFor int
	cut    []*cache.Entry
}

func (s *scopedSource) Snapshot(context.Context) (*cache.Snapshot, error) {
	entries, err := s.shared.all()
	if err != nil {
		return nil, err
	}
	scope, hidden, generation := s.parent.currentScope(s.name)
	switch {
	case hidden:
		entries = nil
	case scope != nil:
		s.cutMu.Lock()
		if s.cutFor != generation || s.cut == nil {
			in := []*cache.Entry{}
			for _, e := range entries {
				if scope[e.Package()] {
					in = append(in, e)
				}
			}
			s.cutFor, s.cut = generation, in
		}
		entries = s.cut
		s.cutMu.Unlock()
	}
	// Never reused: the next lookup may have another scope.
	return &cache.Snapshot{Entries: entries, Valid: cache.ValidOnce()}, nil
}
