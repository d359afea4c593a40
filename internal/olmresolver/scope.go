package olmresolver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"

	"github.com/csi-olm/csi-olm/internal/dependency"
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
	deps *dependency.Graph
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
// olm.constraint, which may name anything, is among them.
func (s *scopedSources) reach(installed []*cache.Entry) (map[string]bool, error) {
	g, err := s.shared.graph()
	if err != nil {
		return nil, err
	}
	roots := make([]string, len(installed))
	own := make([]dependency.Requirements, len(installed))
	for i, e := range installed {
		// An installed CSV's requirements are its own, which its package's catalog bundles may
		// not share.
		r, _, err := dependency.Read(dependency.FromAPI(e.Properties))
		if err != nil {
			return nil, fmt.Errorf("installed CSV %s: %w", e.Name, err)
		}
		roots[i], own[i] = e.Package(), r
	}
	return g.Reach(roots, own...), nil
}

// graph reads every catalog once and records what each package's bundles provide and need.
func (s *sharedSources) graph() (*dependency.Graph, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deps != nil {
		return s.deps, nil
	}
	g := dependency.NewGraph()
	for _, key := range slices.SortedFunc(maps.Keys(s.sources), func(a, b cache.SourceKey) int { return strings.Compare(a.Name, b.Name) }) {
		entries, err := s.sources[key].all()
		if err != nil {
			return nil, fmt.Errorf("reading catalog %s: %w", key.Name, err)
		}
		for _, e := range entries {
			if err := g.Add(e.Package(), dependency.FromAPI(e.Properties)); err != nil {
				return nil, fmt.Errorf("bundle %s of catalog %s: %w", e.Name, key.Name, err)
			}
		}
	}
	s.deps = g
	return g, nil
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
