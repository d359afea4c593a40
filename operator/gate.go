package operator

import (
	"context"
	"sync/atomic"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gate decides what library-go's operand controllers may see of the ClusterCSIDriver.
//
// library-go's controllers remove their operand as soon as the CR is Removed or deleted, and
// apply their manifests as soon as it is Managed. Two decisions come first here:
//   - adoption: until the community driver's objects are prepared to be taken over in place
//     (see adoption.go), the controllers see Unmanaged and touch nothing;
//   - uninstall: until no EFS PersistentVolume is left (see uninstall.go), a Removed or deleted
//     CR is shown to them as Managed and not deleted, so the driver keeps serving its volumes;
//     after that, a deleted CR is shown as Removed.
type gate struct {
	adopted        atomic.Bool
	removalAllowed atomic.Bool
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
	if state == operatorv1.Removed && !c.gate.removalAllowed.Load() {
		state = operatorv1.Managed
	}
	// Once removal is allowed, a deleted CR is a Removed one: library-go's operand controllers
	// would otherwise re-apply their objects until the CR is gone.
	if meta, err := c.OperatorClientWithFinalizers.GetObjectMeta(); err == nil && meta.DeletionTimestamp != nil && c.gate.removalAllowed.Load() {
		state = operatorv1.Removed
	}
	if state == operatorv1.Managed && !c.gate.adopted.Load() {
		state = operatorv1.Unmanaged
	}
	if state == spec.ManagementState {
		return spec
	}
	spec = spec.DeepCopy()
	spec.ManagementState = state
	return spec
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
