package olm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	"github.com/operator-framework/operator-registry/pkg/api"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// Registry is a connection to a catalog's gRPC registry, the API OLM itself resolves from.
type Registry struct {
	// Name says which catalog answers, for messages: namespace/name.
	Name string
	// source is the CatalogSource's name, as OLM's resolver knows it.
	source string
	conn   *grpc.ClientConn
	client api.RegistryClient
	// stopForward ends the port-forward the connection goes through, if any.
	stopForward func()
}

// CatalogSourceLabel is the label OLM puts on the registry pod it runs for a CatalogSource.
const CatalogSourceLabel = "olm.catalogSource"

// defaultRegistryPort is where OLM's registry pods serve gRPC.
const defaultRegistryPort = 50051

// NeedsPortForward is true for a CatalogSource whose registry runs in the cluster, behind a
// Service only reachable from inside it.
func NeedsPortForward(cs *operatorsv1alpha1.CatalogSource) bool { return cs.Spec.Address == "" }

// DialRegistry connects to the registry of a CatalogSource: at address when given, else at the
// CatalogSource's spec.address, else through a port-forward to the registry pod OLM runs for
// it, which works from inside and outside the cluster alike.
func DialRegistry(ctx context.Context, c client.Reader, config *rest.Config, cs *operatorsv1alpha1.CatalogSource, address string) (*Registry, error) {
	r := &Registry{Name: cs.Namespace + "/" + cs.Name, source: cs.Name, stopForward: func() {}}
	if address == "" {
		address = cs.Spec.Address
	}
	if address == "" {
		pod, port, err := registryPod(ctx, c, cs)
		if err != nil {
			return nil, err
		}
		if address, r.stopForward, err = kube.PortForward(ctx, config, cs.Namespace, pod, port); err != nil {
			return nil, fmt.Errorf("reaching the registry of CatalogSource %s: %w", r.Name, err)
		}
	}
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		r.stopForward()
		return nil, fmt.Errorf("connecting to the registry of CatalogSource %s at %s: %w", r.Name, address, err)
	}
	r.conn, r.client = conn, api.NewRegistryClient(conn)
	probe, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := r.client.ListPackages(probe, &api.ListPackageRequest{}); err != nil {
		r.Close()
		return nil, fmt.Errorf("asking the registry of CatalogSource %s at %s: %w", r.Name, address, err)
	}
	return r, nil
}

// registryPod finds a running registry pod of a CatalogSource, and the port it serves on.
func registryPod(ctx context.Context, c client.Reader, cs *operatorsv1alpha1.CatalogSource) (string, int, error) {
	port := defaultRegistryPort
	if svc := cs.Status.RegistryServiceStatus; svc != nil && svc.Port != "" {
		if p, err := strconv.Atoi(svc.Port); err == nil {
			port = p
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(cs.Namespace), client.MatchingLabels{CatalogSourceLabel: cs.Name}); err != nil {
		return "", 0, fmt.Errorf("looking for the registry pod of CatalogSource %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			return pod.Name, port, nil
		}
	}
	return "", 0, fmt.Errorf("CatalogSource %s/%s has no address and no running registry pod (label %s=%s): pass --registry-address host:port of its registry",
		cs.Namespace, cs.Name, CatalogSourceLabel, cs.Name)
}

// Close closes the connection and any port-forward under it.
func (r *Registry) Close() {
	r.conn.Close()
	r.stopForward()
}

// Upgrade is where OLM takes an installed CSV in a channel of a catalog: the channel's head, the
// bundles it installs on the way, and the first step's edge.
type Upgrade struct {
	Channel  string   `json:"channel"`
	Channels []string `json:"channels"`
	Head     string   `json:"head"`
	// Path are the CSVs OLM installs one after another, the head last.
	Path []string `json:"path,omitempty"`
	// Edge is the bundle OLM installs first, and Why says through which of its fields.
	Edge string `json:"edge,omitempty"`
	Why  string `json:"why,omitempty"`
}

// FindUpgrade asks OLM's own resolver, over the registry, where a Subscription to a channel of
// the package (empty: its default channel) takes the installed operator: the same rule `csi-olm
// catalog simulate` follows, checked against OLM by the test bed's cross-check. It fails unless
// OLM reaches the channel's head, saying where and why it stops.
func (r *Registry) FindUpgrade(ctx context.Context, pkg, channel string, installed olmresolver.Operator) (*Upgrade, error) {
	p, err := r.client.GetPackage(ctx, &api.GetPackageRequest{Name: pkg})
	if status.Code(err) == codes.NotFound {
		return nil, fmt.Errorf("catalog %s does not carry package %s", r.Name, pkg)
	}
	if err != nil {
		return nil, fmt.Errorf("asking catalog %s for package %s: %w", r.Name, pkg, err)
	}
	up := &Upgrade{Channel: channel}
	for _, ch := range p.Channels {
		up.Channels = append(up.Channels, ch.Name)
	}
	slices.Sort(up.Channels)
	if up.Channel == "" {
		up.Channel = p.DefaultChannelName
	}
	if !slices.Contains(up.Channels, up.Channel) {
		return nil, &NoChannelError{Catalog: r.Name, Package: pkg, Channel: up.Channel, Channels: up.Channels}
	}
	head, err := r.client.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: pkg, ChannelName: up.Channel})
	if err != nil {
		return nil, fmt.Errorf("asking catalog %s for the head of channel %s of %s: %w", r.Name, up.Channel, pkg, err)
	}
	up.Head = head.CsvName
	resolver, err := olmresolver.New(olmresolver.Source{Name: r.source, Client: registryclient.NewClientFromConn(r.conn)})
	if err != nil {
		return nil, err
	}
	sub := &olmresolver.Subscription{Name: pkg, Package: pkg, Channel: up.Channel, Catalog: r.source}
	current := installed
	for seen := map[string]bool{current.CSV: true}; current.CSV != up.Head; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		current.Subscription = sub
		ops, err := resolver.Resolve([]olmresolver.Operator{current})
		var failed *olmresolver.ResolutionError
		if errors.As(err, &failed) {
			return nil, fmt.Errorf("OLM cannot resolve package %s in channel %s of catalog %s from %s: ResolutionFailed (%s): %s", pkg, up.Channel, r.Name, current.CSV, failed.Reason, failed.Message)
		}
		if err != nil {
			return nil, fmt.Errorf("resolving package %s in channel %s of catalog %s from %s: %w", pkg, up.Channel, r.Name, current.CSV, err)
		}
		next := slices.IndexFunc(ops, func(e *cache.Entry) bool { return e.Package() == pkg })
		if next < 0 {
			why, err := r.whyStranded(resolver, pkg, up.Channel, current)
			if err != nil {
				return nil, err
			}
			return nil, &StrandedError{Catalog: r.Name, Package: pkg, Channel: up.Channel, Installed: installed.CSV, At: current.CSV, Head: up.Head, Why: why}
		}
		e := ops[next]
		if seen[e.Name] {
			return nil, fmt.Errorf("OLM would install %s again in channel %s of catalog %s: the channel's edges loop", e.Name, up.Channel, r.Name)
		}
		seen[e.Name] = true
		if len(up.Path) == 0 {
			up.Edge = e.Name
			if up.Why, err = r.why(ctx, pkg, up.Channel, e.Name, installed); err != nil {
				return nil, err
			}
		}
		up.Path = append(up.Path, e.Name)
		current = olmresolver.Operator{CSV: e.Name, Version: *e.Version, Properties: e.Properties}
	}
	return up, nil
}

// why says which field of the bundle OLM installs first upgrades from the installed operator.
// The fields are read from the registry: OLM's resolver rewrites the replaces of what it returns
// to the CSV it replaces.
func (r *Registry) why(ctx context.Context, pkg, channel, csv string, installed olmresolver.Operator) (string, error) {
	b, err := r.client.GetBundle(ctx, &api.GetBundleRequest{PkgName: pkg, ChannelName: channel, CsvName: csv})
	if err != nil {
		return "", fmt.Errorf("asking catalog %s for bundle %s: %w", r.Name, csv, err)
	}
	// A skipRange that does not parse leaves replaces and skips.
	rule, _ := upgrade.Edges{Replaces: b.Replaces, Skips: b.Skips, SkipRange: b.SkipRange}.Compile()
	switch kind, ok := rule.From(installed.CSV, &installed.Version); {
	case !ok:
		return "", nil
	case kind == upgrade.SkipRange:
		return fmt.Sprintf("skipRange %q includes %s", b.SkipRange, installed.Version), nil
	default:
		return string(kind) + " " + installed.CSV, nil
	}
}

// whyStranded says why OLM keeps at although the channel's head is another bundle: no bundle
// upgrades from it, or OLM refuses those that do, in its own words.
func (r *Registry) whyStranded(resolver *olmresolver.Resolver, pkg, channel string, at olmresolver.Operator) (string, error) {
	cands, err := resolver.Candidates(r.source, pkg, channel, at)
	if err != nil {
		return "", fmt.Errorf("asking catalog %s which bundles replace %s: %w", r.Name, at.CSV, err)
	}
	if len(cands) == 0 {
		return fmt.Sprintf("no bundle replaces or skips %s, and no skipRange contains %s", at.CSV, at.Version), nil
	}
	// The nearest the head first, as OLM prefers them.
	slices.SortStableFunc(cands, func(a, b *cache.Entry) int { return b.Version.Compare(*a.Version) })
	var names []string
	for _, c := range cands {
		names = append(names, c.Name)
		// Installed without a Subscription a CSV must stay, so OLM says what keeps it out.
		_, err := resolver.Resolve([]olmresolver.Operator{{CSV: c.Name, Version: *c.Version, Properties: c.Properties}})
		var failed *olmresolver.ResolutionError
		if errors.As(err, &failed) {
			return fmt.Sprintf("OLM cannot install %s, which can replace %s: ResolutionFailed (%s): %s", c.Name, at.CSV, failed.Reason, failed.Message), nil
		}
		if err != nil {
			return "", fmt.Errorf("asking OLM's resolver about %s of catalog %s: %w", c.Name, r.Name, err)
		}
	}
	return fmt.Sprintf("OLM's resolver accepts each bundle that replaces %s (%s) alone, yet leaves them out of the channel's order: a bundle that another skips is never an upgrade target", at.CSV, strings.Join(names, ", ")), nil
}

// StrandedError is an installed operator OLM never takes to the channel's head.
type StrandedError struct {
	Catalog, Package, Channel string
	Installed, At, Head       string
	// Why says why OLM keeps At.
	Why string
}

func (e *StrandedError) Error() string {
	at := e.At
	if e.At != e.Installed {
		at = fmt.Sprintf("%s, where it takes the installed %s,", e.At, e.Installed)
	}
	return fmt.Sprintf("OLM would keep %s in channel %s of package %s in catalog %s, short of the channel's head %s: %s",
		at, e.Channel, e.Package, e.Catalog, e.Head, e.Why)
}

// NoChannelError is a channel the catalog's package does not have.
type NoChannelError struct {
	Catalog, Package, Channel string
	Channels                  []string
}

func (e *NoChannelError) Error() string {
	return fmt.Sprintf("package %s in catalog %s has no channel %q: its channels are %s", e.Package, e.Catalog, e.Channel, strings.Join(e.Channels, ", "))
}
