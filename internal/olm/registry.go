package olm

import (
	"context"
	"fmt"
	"strconv"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/pkg/api"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
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

// Source is the CatalogSource's name, as OLM's resolver knows the catalog.
func (r *Registry) Source() string { return r.source }

// Client is the registry's client, as OLM's resolver reads it.
func (r *Registry) Client() registryclient.Interface { return registryclient.NewClientFromConn(r.conn) }
