// Package olmresolver is the one rule for OLM's choice: OLM's own resolver
// (operator-lifecycle-manager's pkg/controller/registry/resolver, v0.46.0, the OLM the test bed
// runs) over catalogs reached through the registry API, and over one namespace of installed
// operators, as OLM's catalog operator resolves a namespace. `csi-olm catalog simulate` and
// `catalog diff` ask it over catalogs served in-process; `csi-olm migrate subscription` asks it
// over the live catalog the Subscription switches to. Neither restates OLM's rules to decide.
//
// What it models of a cluster:
//   - CatalogSources in one global catalog namespace, each with its spec.priority: OLM prefers a
//     dependency from the catalog of the bundle that needs it, then from higher priorities;
//   - a namespace of installed CSVs, as OLM's csvSource reads them (name, version, projected
//     properties), each with the Subscription that installed it, if any: a CSV without one must
//     stay, and its dependencies must stay satisfied;
//   - the namespace's Subscriptions, all resolved together, as OLM does.
package olmresolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	v1alpha1listers "github.com/operator-framework/operator-lifecycle-manager/pkg/api/client/listers/operators/v1alpha1"
	olmregistry "github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/projection"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/solver"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8scache "k8s.io/client-go/tools/cache"
)

// The resolved namespace, and OLM's global catalog namespace where the CatalogSources live, as
// openshift-marketplace does on OpenShift. They appear in OLM's messages only.
const (
	Namespace        = "resolved"
	CatalogNamespace = "olm"
)

// Source is a CatalogSource and the registry that serves it.
type Source struct {
	Name string
	// Priority is the CatalogSource's spec.priority.
	Priority int
	Client   registryclient.Interface
}

// Operator is an installed CSV as OLM's csvSource reads it.
type Operator struct {
	CSV     string
	Version semver.Version
	// Properties are those OLM projected onto the CSV from its bundle (olm.package, olm.gvk,
	// the requirements...).
	Properties []*api.Property
	// Subscription is the Subscription that installed it; nil for a CSV nothing subscribes to,
	// which OLM keeps as it is.
	Subscription *Subscription
}

// Subscription is what OLM reads of a Subscription to resolve it.
type Subscription struct {
	Name, Package, Channel, Catalog string
}

// Resolver is OLM's resolver over a fixed set of CatalogSources. It is safe for concurrent use.
// OLM's cache reads the installed operators from one source, so one OLM resolver resolves one
// namespace at a time; the Resolver has one lane, an OLM resolver and cache of its own, per
// core, all reading the catalogs it read once.
type Resolver struct {
	lanes chan *lane
}

type lane struct {
	cache     *cache.Cache
	resolver  *resolver.Resolver
	installed *installedSource
	catalogs  *scopedSources
}

// ResolutionError is OLM saying no: what the Subscription's ResolutionFailed condition carries
// (its reason and OLM's message), as opposed to a failure to ask.
type ResolutionError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func (e *ResolutionError) Error() string { return e.Message }

// ConstraintsNotSatisfiable is the reason OLM gives a ResolutionFailed condition when the
// solver finds no solution.
const ConstraintsNotSatisfiable = "ConstraintsNotSatisfiable"

// ErrorPreventedResolution is the reason OLM's catalog operator gives a ResolutionFailed
// condition when its resolver fails otherwise, on what the namespace and the catalogs hold (two
// installed CSVs of one name, say); it then resolves again, to the same end.
const ErrorPreventedResolution = "ErrorPreventedResolution"

// New builds OLM's resolver over the sources.
func New(sources ...Source) (*Resolver, error) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	indexer := k8scache.NewIndexer(k8scache.MetaNamespaceKeyFunc, k8scache.Indexers{k8scache.NamespaceIndex: k8scache.MetaNamespaceIndexFunc})
	clients := registryClients{}
	priorities := priorities{}
	for _, s := range sources {
		key := olmregistry.CatalogKey{Name: s.Name, Namespace: CatalogNamespace}
		if _, dup := clients[key]; dup {
			return nil, fmt.Errorf("two catalog sources are named %q", s.Name)
		}
		cs := &operatorsv1alpha1.CatalogSource{
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: CatalogNamespace},
			Spec:       operatorsv1alpha1.CatalogSourceSpec{Priority: s.Priority},
		}
		if err := indexer.Add(cs); err != nil {
			return nil, err
		}
		clients[key] = s.Client
		priorities[SourceKey(s.Name)] = s.Priority
	}
	shared := newSharedSources(resolver.SourceProviderFromRegistryClientProvider(clients, v1alpha1listers.NewCatalogSourceLister(indexer), log), CatalogNamespace)
	n := runtime.GOMAXPROCS(0)
	r := &Resolver{lanes: make(chan *lane, n)}
	for range n {
		installed, catalogs := &installedSource{}, shared.lane()
		c := cache.New(sourceProvider{catalogs: catalogs, installed: installed}, cache.WithLogger(log), cache.WithSourcePriorityProvider(priorities))
		r.lanes <- &lane{cache: c, resolver: resolver.NewDefaultResolver(c, log), installed: installed, catalogs: catalogs}
	}
	return r, nil
}

// SourceKey is the cache's key of a catalog source.
func SourceKey(name string) cache.SourceKey {
	return cache.SourceKey{Name: name, Namespace: CatalogNamespace}
}

// Resolve asks OLM what it installs in a namespace holding the installed operators: the new
// CSVs, each replacing the installed CSV of its Subscription or, for a dependency, installed
// beside the others. None means OLM keeps what is installed. OLM saying no is a
// *ResolutionError, whatever made it say so; any other error is a failure to read the catalogs.
// The hidden catalogs are left out, as if the cluster had no such CatalogSource.
func (r *Resolver) Resolve(installed []Operator, hidden ...string) ([]*cache.Entry, error) {
	l := <-r.lanes
	defer func() { r.lanes <- l }()
	var entries []*cache.Entry
	var subs []*operatorsv1alpha1.Subscription
	for _, op := range installed {
		e := &cache.Entry{Name: op.CSV, Version: &op.Version, Properties: op.Properties}
		e.SourceInfo = &cache.OperatorSourceInfo{Package: PackageOf(op.Properties), Catalog: cache.NewVirtualSourceKey(Namespace)}
		if s := op.Subscription; s != nil {
			sub := &operatorsv1alpha1.Subscription{
				ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: Namespace},
				Spec: &operatorsv1alpha1.SubscriptionSpec{
					CatalogSource: s.Catalog, CatalogSourceNamespace: CatalogNamespace,
					Package: s.Package, Channel: s.Channel, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
				},
				Status: operatorsv1alpha1.SubscriptionStatus{InstalledCSV: op.CSV},
			}
			e.SourceInfo.Subscription = sub
			subs = append(subs, sub)
		}
		entries = append(entries, e)
	}
	l.installed.set(entries)
	scope, err := l.catalogs.reach(entries)
	if err != nil {
		return nil, err
	}
	l.catalogs.setScope(scope, hidden...)
	ops, err := l.resolver.Resolve([]string{Namespace, CatalogNamespace}, subs)
	var unsat solver.NotSatisfiable
	switch {
	case errors.As(err, &unsat):
		return nil, &ResolutionError{Reason: ConstraintsNotSatisfiable, Message: err.Error()}
	case err != nil && l.cache.Namespaced(Namespace, CatalogNamespace).Error() == nil:
		// The catalogs were read: the failure is OLM's answer to what they and the namespace
		// hold, not a failure to ask.
		return nil, &ResolutionError{Reason: ErrorPreventedResolution, Message: err.Error()}
	}
	return ops, err
}

// Find looks entries of a package up in one catalog ("" for any package), through the cache the
// resolver reads.
func (r *Resolver) Find(catalog, pkg string, p ...cache.Predicate) ([]*cache.Entry, error) {
	l := <-r.lanes
	defer func() { r.lanes <- l }()
	var scope map[string]bool
	if pkg != "" {
		scope = map[string]bool{pkg: true}
	}
	l.catalogs.setScope(scope)
	c := l.cache.Namespaced(Namespace, CatalogNamespace)
	found := c.Catalog(SourceKey(catalog)).Find(p...)
	return found, c.Error()
}

// Candidates are the bundles of a channel that OLM's resolver considers as replacements for the
// installed operator: its own predicate (resolver.getSubscriptionVariables), before the channel's
// order drops the skipped ones.
func (r *Resolver) Candidates(catalog, pkg, channel string, installed Operator) ([]*cache.Entry, error) {
	return r.Find(catalog, pkg, cache.PkgPredicate(pkg), cache.ChannelPredicate(channel),
		cache.Not(cache.CSVNamePredicate(installed.CSV)),
		cache.Or(cache.SkipRangeIncludesPredicate(installed.Version), cache.ReplacesPredicate(installed.CSV)))
}

// PackageOf reads the olm.package property's package, "" when there is none.
func PackageOf(props []*api.Property) string {
	for _, p := range props {
		var pkg property.Package
		if p.Type == property.TypePackage && json.Unmarshal([]byte(p.Value), &pkg) == nil {
			return pkg.PackageName
		}
	}
	return ""
}

// registryClients hands OLM the registries, by CatalogSource.
type registryClients map[olmregistry.CatalogKey]registryclient.Interface

func (r registryClients) ClientsForNamespaces(...string) map[olmregistry.CatalogKey]registryclient.Interface {
	return r
}

// priorities plays OLM's CatalogSource priority provider.
type priorities map[cache.SourceKey]int

func (p priorities) Priority(k cache.SourceKey) int { return p[k] }

// installedSource plays OLM's csvSource (source_csvs.go): the namespace's installed CSVs, under
// the virtual "@existing" catalog key. Its snapshot is never reused (cache.ValidOnce), so each
// resolution sees what the previous one installed. The cache takes snapshots in goroutines of
// its own, some after the lookup that asked for them has returned, hence the lock.
type installedSource struct {
	mu      sync.Mutex
	entries []*cache.Entry
}

func (s *installedSource) set(entries []*cache.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = entries
}

func (s *installedSource) Snapshot(context.Context) (*cache.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &cache.Snapshot{Entries: slices.Clone(s.entries), Valid: cache.ValidOnce()}, nil
}

type sourceProvider struct {
	catalogs  *scopedSources
	installed *installedSource
}

func (p sourceProvider) Sources(namespaces ...string) map[cache.SourceKey]cache.Source {
	out := map[cache.SourceKey]cache.Source{}
	for k, v := range p.catalogs.sources {
		if slices.Contains(namespaces, k.Namespace) {
			out[k] = v
		}
	}
	// OLM's csvSourceProvider serves the first namespace only: the one being resolved.
	if len(namespaces) > 0 && namespaces[0] == Namespace {
		out[cache.NewVirtualSourceKey(Namespace)] = p.installed
	}
	return out
}

// FromCSV is an installed CSV as OLM's csvSource reads it: its spec.version and the properties
// OLM projected onto it or, lacking them, the package property OLM infers from the Subscription
// that installed it (pkg).
func FromCSV(csv *operatorsv1alpha1.ClusterServiceVersion, pkg string) (Operator, error) {
	op := Operator{CSV: csv.Name, Version: csv.Spec.Version.Version}
	if anno, ok := csv.Annotations[projection.PropertiesAnnotationKey]; ok {
		props, err := projection.PropertyListFromPropertiesAnnotation(anno)
		if err != nil {
			return op, fmt.Errorf("properties of CSV %s/%s: %w", csv.Namespace, csv.Name, err)
		}
		op.Properties = props
		return op, nil
	}
	if pkg != "" {
		p := property.MustBuildPackage(pkg, op.Version.String())
		op.Properties = []*api.Property{{Type: p.Type, Value: string(p.Value)}}
	}
	return op, nil
}
