package olm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// Registry is a connection to a catalog's gRPC registry, the API OLM itself resolves from.
type Registry struct {
	// Name says which catalog answers, for messages.
	Name   string
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
	r := &Registry{Name: cs.Namespace + "/" + cs.Name, stopForward: func() {}}
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

// Upgrade is what a catalog offers an installed CSV: the channel's head, and the bundle whose
// replaces, skips or skipRange lets OLM leave the installed CSV.
type Upgrade struct {
	Channel  string   `json:"channel"`
	Channels []string `json:"channels"`
	Head     string   `json:"head"`
	// Edge is the bundle that upgrades from the installed CSV, and Why says through which field.
	Edge string `json:"edge,omitempty"`
	Why  string `json:"why,omitempty"`
}

// FindUpgrade asks the registry how the installed CSV (name and version) upgrades in a channel
// of a package. An empty channel means the package's default channel.
func (r *Registry) FindUpgrade(ctx context.Context, pkg, channel, installedCSV, installedVersion string) (*Upgrade, error) {
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
	if up.Head == installedCSV {
		return up, nil
	}
	bundles, err := r.channelBundles(ctx, pkg, up.Channel)
	if err != nil {
		return nil, err
	}
	// OLM moves to the newest bundle that upgrades from the installed one: with a skipRange
	// that is often the head itself.
	var installed *semver.Version
	if v, err := semver.ParseTolerant(installedVersion); err == nil {
		installed = &v
	}
	var newest semver.Version
	for _, b := range bundles {
		// A bundle whose skipRange does not parse is still reached by its replaces and skips.
		rule, _ := upgrade.Edges{Replaces: b.Replaces, Skips: b.Skips, SkipRange: b.SkipRange}.Compile()
		var why string
		switch kind, ok := rule.From(installedCSV, installed); {
		case !ok:
			continue
		case kind == upgrade.SkipRange:
			why = fmt.Sprintf("skipRange %q includes %s", b.SkipRange, installed)
		default:
			why = string(kind) + " " + installedCSV
		}
		v, err := semver.ParseTolerant(b.Version)
		if up.Edge == "" || (err == nil && v.GT(newest)) {
			up.Edge, up.Why, newest = b.CsvName, why, v
		}
	}
	if up.Edge != "" {
		return up, nil
	}
	return nil, fmt.Errorf("no bundle in channel %s of package %s in catalog %s upgrades from the installed %s (version %s) by replaces, skips or skipRange, so OLM would never leave it; the channel's head is %s",
		up.Channel, pkg, r.Name, installedCSV, installedVersion, up.Head)
}

// NoChannelError is a channel the catalog's package does not have.
type NoChannelError struct {
	Catalog, Package, Channel string
	Channels                  []string
}

func (e *NoChannelError) Error() string {
	return fmt.Sprintf("package %s in catalog %s has no channel %q: its channels are %s", e.Package, e.Catalog, e.Channel, strings.Join(e.Channels, ", "))
}

func (r *Registry) channelBundles(ctx context.Context, pkg, channel string) ([]*api.Bundle, error) {
	stream, err := r.client.ListBundles(ctx, &api.ListBundlesRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing the bundles of catalog %s: %w", r.Name, err)
	}
	var bundles []*api.Bundle
	for {
		b, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return bundles, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listing the bundles of catalog %s: %w", r.Name, err)
		}
		if b.PackageName == pkg && b.ChannelName == channel {
			bundles = append(bundles, b)
		}
	}
}
