package operator

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/csi/csiconfigobservercontroller"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// gate decides what library-go's operand controllers may see of the ClusterCSIDriver.
//
// library-go's controllers remove their operand as soon as the CR is Removed or deleted, and
// apply their manifests as soon as it is Managed. Three decisions come first here:
//   - adoption: until the community driver's objects are prepared to be taken over in place
//     (see adoption.go), the controllers see Unmanaged and touch nothing;
//   - removal: until the lifecycle (lifecycle.go) reaches a phase that removes the driver, a
//     Removed or deleted CR is shown to them as Managed and not deleted, so the driver keeps
//     serving the volumes pods use; after that, a deleted CR is shown as Removed;
//   - TLS profile: until the config observer has recorded the cluster's TLS profile in the CR's
//     observedConfig, a Managed CR is shown as Unmanaged. library-go fills the controller's
//     ${TLS_CIPHER_SUITES} and ${TLS_MIN_VERSION} from observedConfig and leaves them as they are
//     when it is empty, so on a new install the first Deployment would otherwise give
//     kube-rbac-proxy those literal strings as flags, and a second rollout would follow.
//
// A gate that opens or closes is no event of the CR's informer, so the operand controllers would
// only see the change at their next event or resync, minutes later. A restarted operator finds
// the adoption done without writing anything, and its controllers, which looked once while the
// gate was still closed, would leave a missing Deployment missing. So the gate hands each of
// them an update of the CR whenever it changes.
type gate struct {
	adopted        atomic.Bool
	removalAllowed atomic.Bool

	mu       sync.Mutex
	informer cache.SharedIndexInformer
	handlers []cache.ResourceEventHandler
}

func (g *gate) setAdopted(v bool) {
	if g.adopted.Swap(v) != v {
		g.wake()
	}
}

// setRemovalAllowed sets whether removal is allowed, and returns whether it was.
func (g *gate) setRemovalAllowed(v bool) (was bool) {
	if was = g.removalAllowed.Swap(v); was != v {
		g.wake()
	}
	return was
}

// wake hands every operand controller an update of the CR as it is, as if it had changed.
func (g *gate) wake() {
	g.mu.Lock()
	informer, handlers := g.informer, slices.Clone(g.handlers)
	g.mu.Unlock()
	if informer == nil {
		return
	}
	for _, obj := range informer.GetStore().List() {
		for _, h := range handlers {
			h.OnUpdate(obj, obj)
		}
	}
}

// gatedInformer is the CR's informer as the operand controllers get it: it records their
// handlers for the gate to wake.
type gatedInformer struct {
	cache.SharedIndexInformer
	gate *gate
}

func (i *gatedInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.gate.mu.Lock()
	i.gate.informer = i.SharedIndexInformer
	i.gate.handlers = append(i.gate.handlers, h)
	i.gate.mu.Unlock()
	return i.SharedIndexInformer.AddEventHandler(h)
}

// gatedClient is the operator client handed to the operand controllers.
type gatedClient struct {
	v1helpers.OperatorClientWithFinalizers
	gate *gate
}

func (c *gatedClient) view(spec *operatorv1.OperatorSpec) *operatorv1.OperatorSpec {
	if spec == nil {
		return nil
	}
	state := spec.ManagementState
	meta, err := c.OperatorClientWithFinalizers.GetObjectMeta()
	deleting := err == nil && meta.DeletionTimestamp != nil
	if state == operatorv1.Removed || deleting {
		switch {
		case c.gate.removalAllowed.Load():
			// Once removal is allowed, a deleted CR is a Removed one: library-go's operand
			// controllers would otherwise re-apply their objects until the CR is gone.
			state = operatorv1.Removed
		case state == operatorv1.Removed:
			state = operatorv1.Managed
		}
	}
	if state == operatorv1.Managed && (!c.gate.adopted.Load() || !tlsProfileObserved(spec)) {
		state = operatorv1.Unmanaged
	}
	if state == spec.ManagementState {
		return spec
	}
	spec = spec.DeepCopy()
	spec.ManagementState = state
	return spec
}

// tlsProfileObserved reports whether observedConfig holds both values library-go substitutes
// into the controller Deployment's TLS placeholders. A custom profile without a minimum version
// is recorded as an empty string, which library-go replaces with its default: that counts.
func tlsProfileObserved(spec *operatorv1.OperatorSpec) bool {
	if len(spec.ObservedConfig.Raw) == 0 {
		return false
	}
	var config map[string]any
	if err := json.Unmarshal(spec.ObservedConfig.Raw, &config); err != nil {
		return false
	}
	_, suites, err := unstructured.NestedStringSlice(config, csiconfigobservercontroller.CipherSuitesPath()...)
	if err != nil {
		return false
	}
	_, minVersion, err := unstructured.NestedString(config, csiconfigobservercontroller.MinTLSVersionPath()...)
	return err == nil && suites && minVersion
}

func (c *gatedClient) Informer() cache.SharedIndexInformer {
	return &gatedInformer{SharedIndexInformer: c.OperatorClientWithFinalizers.Informer(), gate: c.gate}
}

func (c *gatedClient) GetOperatorState() (*operatorv1.OperatorSpec, *operatorv1.OperatorStatus, string, error) {
	spec, status, rv, err := c.OperatorClientWithFinalizers.GetOperatorState()
	return c.view(spec), status, rv, err
}

func (c *gatedClient) GetOperatorStateWithQuorum(ctx context.Context) (*operatorv1.OperatorSpec, *operatorv1.OperatorStatus, string, error) {
	spec, status, rv, err := c.OperatorClientWithFinalizers.GetOperatorStateWithQuorum(ctx)
	return c.view(spec), status, rv, err
}

func (c *gatedClient) GetObjectMeta() (*metav1.ObjectMeta, error) {
	meta, err := c.OperatorClientWithFinalizers.GetObjectMeta()
	if meta != nil && meta.DeletionTimestamp != nil && !c.gate.removalAllowed.Load() {
		meta = meta.DeepCopy()
		meta.DeletionTimestamp = nil
	}
	return meta, err
}

// UpdateOperatorSpec writes back the real management state: a controller that read the gated
// view and updates the spec (the config observer does) must not turn Removed into Managed.
func (c *gatedClient) UpdateOperatorSpec(ctx context.Context, resourceVersion string, in *operatorv1.OperatorSpec) (*operatorv1.OperatorSpec, string, error) {
	real, _, _, err := c.OperatorClientWithFinalizers.GetOperatorState()
	if err != nil {
		return nil, "", err
	}
	out := in.DeepCopy()
	out.ManagementState = real.ManagementState
	spec, rv, err := c.OperatorClientWithFinalizers.UpdateOperatorSpec(ctx, resourceVersion, out)
	return c.view(spec), rv, err
}

// managed reports whether the operand controllers see a Managed CR.
func (c *gatedClient) managed() bool {
	spec, _, _, err := c.GetOperatorState()
	return err == nil && spec.ManagementState == operatorv1.Managed
}

// never is a shouldDelete that leaves removal to the uninstall controller.
func never() bool { return false }
