package simulate

import (
	"context"
	"io"
	"slices"
	"sync"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	v1alpha1listers "github.com/operator-framework/operator-lifecycle-manager/pkg/api/client/listers/operators/v1alpha1"
	olmregistry "github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8scache "k8s.io/client-go/tools/cache"
)

// The simulated cluster: the Subscription's namespace, and OLM's global catalog namespace where
// the CatalogSources live, as openshift-marketplace does on OpenShift.
const (
	subscriptionNamespace = "simulated"
	catalogNamespace      = "olm"
)

// olmResolver is OLM's own resolver (operator-lifecycle-manager's resolver package, the version
// the test bed runs) wired to catalogs served in-process and to one installed CSV that the
// simulation moves along the path.
type olmResolver struct {
	cache     *cache.Cache
	resolver  *resolver.Resolver
	installed *installedSource
}

// registryClients hands OLM the in-process registries, by CatalogSource.
type registryClients map[olmregistry.CatalogKey]registryclient.Interface

func (r registryClients) ClientsForNamespaces(...string) map[olmregistry.CatalogKey]registryclient.Interface {
	return r
}

// installedSource plays OLM's csvSource (source_csvs.go): the namespace's installed CSVs, under
// the virtual "@existing" catalog key. Its snapshot is never reused (cache.ValidOnce), so each
// resolution sees the CSV the previous step installed.
// The cache takes snapshots in goroutines of its own, some after the lookup that asked for them
// has returned, hence the lock.
type installedSource struct {
	mu      sync.Mutex
	entries []*cache.Entry
}

func (s *installedSource) set(entries ...*cache.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = entries
}

func (s *installedSource) Snapshot(context.Context) (*cache.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &cache.Snapshot{Entries: slices.Clone(s.entries), Valid: cache.ValidOnce()}, nil
}

type sources struct {
	registry  cache.SourceProvider
	installed *installedSource
}

func (p sources) Sources(namespaces ...string) map[cache.SourceKey]cache.Source {
	out := map[cache.SourceKey]cache.Source{}
	for k, v := range p.registry.Sources(namespaces...) {
		out[k] = v
	}
	// OLM's csvSourceProvider serves the first namespace only: the one being resolved.
	if len(namespaces) > 0 && namespaces[0] == subscriptionNamespace {
		out[cache.NewVirtualSourceKey(subscriptionNamespace)] = p.installed
	}
	return out
}

// newOLMResolver builds the resolver over CatalogSources named like the catalogs, each with
// priority 0, as `csi-olm catalog` users' sources are.
func newOLMResolver(clients map[string]registryclient.Interface) (*olmResolver, error) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	indexer := k8scache.NewIndexer(k8scache.MetaNamespaceKeyFunc, k8scache.Indexers{k8scache.NamespaceIndex: k8scache.MetaNamespaceIndexFunc})
	rc := registryClients{}
	for name, c := range clients {
		cs := &operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: catalogNamespace}}
		if err := indexer.Add(cs); err != nil {
			return nil, err
		}
		rc[olmregistry.CatalogKey{Name: name, Namespace: catalogNamespace}] = c
	}
	installed := &installedSource{}
	provider := sources{
		registry:  resolver.SourceProviderFromRegistryClientProvider(rc, v1alpha1listers.NewCatalogSourceLister(indexer), log),
		installed: installed,
	}
	c := cache.New(provider, cache.WithLogger(log))
	return &olmResolver{cache: c, resolver: resolver.NewDefaultResolver(c, log), installed: installed}, nil
}

func catalogKey(name string) cache.SourceKey {
	return cache.SourceKey{Name: name, Namespace: catalogNamespace}
}

// find looks entries up in one catalog, through the same cache the resolver reads.
func (r *olmResolver) find(catalog string, p ...cache.Predicate) []*cache.Entry {
	return r.cache.Namespaced(subscriptionNamespace, catalogNamespace).Catalog(catalogKey(catalog)).Find(p...)
}

// next asks OLM which bundle it installs for sub, with installed as the namespace's only CSV.
// It returns nil when OLM keeps what is installed.
func (r *olmResolver) next(sub *operatorsv1alpha1.Subscription, installed *cache.Entry) (*cache.Entry, error) {
	r.installed.set(installed)
	ops, err := r.resolver.Resolve([]string{subscriptionNamespace, catalogNamespace}, []*operatorsv1alpha1.Subscription{sub})
	if err != nil {
		return nil, err
	}
	for _, op := range ops {
		if op.Package() == sub.Spec.Package && op.Name != installed.Name {
			return op, nil
		}
	}
	return nil, nil
}
