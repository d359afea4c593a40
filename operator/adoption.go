package operator

import (
	"context"
	"fmt"
	"slices"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

const adoptionControllerName = "AWSEFSDriverAdoption"

// Reasons of the adoption conditions.
const (
	reasonAdopted           = "AsExpected"
	reasonWaitingNewDriver  = "WaitingForNewDriver"
	reasonAdoptionFailed    = "AdoptionFailed"
	reasonCSIDriverMismatch = "CSIDriverSpecDiffers"
	reasonSecondNodePlugin  = "SecondNodePlugin"
)

// recheckConflict is how soon a refused deployment looks again for the conflicting DaemonSet,
// which lives outside the namespace the informers watch.
const recheckConflict = 10 * time.Second

// adoptionController takes over the community operator's driver objects in place, by name
// (docs/architecture.md#the-community-efs-operator), before library-go's controllers apply theirs:
//   - it strips the ownerReferences to the SharedVolume CRD, so deleting the CRD no longer
//     garbage-collects the driver, and the community ownership label;
//   - it marks the CSIDriver with the spec hash library-go compares, so that applying ours
//     updates it instead of deleting and re-creating it;
//   - once the node DaemonSet runs the supported driver everywhere, it deletes what only the
//     community driver used (its SCC).
//
// Until the first step is done the gate keeps the operand controllers idle.
type adoptionController struct {
	namespace      string
	operatorClient v1helpers.OperatorClientWithFinalizers
	kube           kubernetes.Interface
	dynamic        dynamic.Interface
	daemonSets     appsinformers.DaemonSetInformer
	csiDriver      *storagev1.CSIDriver
	gate           *gate
	// prepared is set once the community objects were readied for library-go's apply.
	prepared bool
}

func newAdoptionController(c *adoptionController, recorder events.Recorder) factory.Controller {
	return factory.New().
		WithInformers(c.operatorClient.Informer(), c.daemonSets.Informer()).
		WithSync(c.sync).
		ResyncEvery(time.Minute).
		ToController(adoptionControllerName, recorder)
}

func (c *adoptionController) sync(ctx context.Context, syncCtx factory.SyncContext) error {
	spec, _, _, err := c.operatorClient.GetOperatorState()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// Other node plugins are looked for whatever the state: one that appears while the CR is
	// Removed closes the gate before the CR is Managed again, so that the operand controllers,
	// which react to that change as fast as this controller, never apply next to it.
	conflicts, err := c.nodePluginsElsewhere(ctx)
	if err != nil {
		return c.report(ctx, operatorv1.ConditionTrue, reasonAdoptionFailed, err.Error(), err)
	}
	if len(conflicts) > 0 {
		// Both node plugins would serve efs.csi.aws.com on every node, on the same socket: the
		// driver is not deployed, or no longer applied, until the other one is gone.
		c.gate.setAdopted(false)
		syncCtx.Queue().AddAfter(syncCtx.QueueKey(), recheckConflict)
		return c.report(ctx, operatorv1.ConditionTrue, reasonSecondNodePlugin, secondNodePluginMessage(conflicts), nil)
	}
	if spec.ManagementState != operatorv1.Managed {
		// The gate stays as adoption left it: a removal stopped by a volume in use puts back
		// what it removed only through an open gate.
		c.gate.setAdopted(c.prepared)
		return c.report(ctx, operatorv1.ConditionFalse, reasonAdopted, "", nil)
	}
	adopted, err := c.prepare(ctx, syncCtx.Recorder())
	if err != nil {
		return c.report(ctx, operatorv1.ConditionTrue, reasonAdoptionFailed, err.Error(), err)
	}
	c.prepared = true
	c.gate.setAdopted(true)
	if len(adopted) > 0 {
		syncCtx.Recorder().Eventf("CommunityDriverAdopted", "Took over the community driver's %v in place", adopted)
	}
	done, err := c.removeCommunityLeftovers(ctx, syncCtx.Recorder())
	if err != nil {
		return c.report(ctx, operatorv1.ConditionTrue, reasonAdoptionFailed, err.Error(), err)
	}
	if !done {
		syncCtx.Queue().AddAfter(syncCtx.QueueKey(), 5*time.Second)
		return c.report(ctx, operatorv1.ConditionFalse, reasonWaitingNewDriver,
			"the community driver's SCC "+efs.CommunitySCC+" is removed once DaemonSet "+efs.NodeDaemonSet+" runs the new driver on every node", nil)
	}
	return c.report(ctx, operatorv1.ConditionFalse, reasonAdopted, "", nil)
}

// report writes the adoption conditions, then returns syncErr.
func (c *adoptionController) report(ctx context.Context, degraded operatorv1.ConditionStatus, reason, message string, syncErr error) error {
	progressing := operatorv1.ConditionFalse
	if reason == reasonWaitingNewDriver {
		progressing = operatorv1.ConditionTrue
	}
	status := applyoperatorv1.OperatorStatus().WithConditions(
		condition(adoptionControllerName+operatorv1.OperatorStatusTypeDegraded, degraded, reason, message),
		condition(adoptionControllerName+operatorv1.OperatorStatusTypeProgressing, progressing, reason, message),
	)
	if err := c.operatorClient.ApplyOperatorStatus(ctx, adoptionControllerName, status); err != nil {
		return err
	}
	return syncErr
}

// nodePluginsElsewhere finds the other node plugins of efs.csi.aws.com (foreignNodePlugins)
// from every DaemonSet and CSINode of the cluster: few objects, read only while the CR is Managed.
func (c *adoptionController) nodePluginsElsewhere(ctx context.Context) ([]nodePlugin, error) {
	daemonSets, err := c.kube.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("looking for other node plugins of %s: %w", efs.DriverName, err)
	}
	csiNodes, err := c.kube.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the nodes' CSI driver registrations: %w", err)
	}
	return foreignNodePlugins(c.namespace, daemonSets.Items, csiNodes.Items), nil
}

// prepare readies the community objects for library-go's apply, and returns those it changed.
func (c *adoptionController) prepare(ctx context.Context, recorder events.Recorder) ([]string, error) {
	var changed []string
	ds, err := c.kube.AppsV1().DaemonSets(c.namespace).Get(ctx, efs.NodeDaemonSet, metav1.GetOptions{})
	if err == nil && disown(&ds.ObjectMeta) {
		if _, err := c.kube.AppsV1().DaemonSets(c.namespace).Update(ctx, ds, metav1.UpdateOptions{FieldManager: adoptionControllerName}); err != nil {
			return changed, fmt.Errorf("adopting DaemonSet %s/%s: %w", c.namespace, efs.NodeDaemonSet, err)
		}
		changed = append(changed, "DaemonSet "+efs.NodeDaemonSet)
	} else if err != nil && !apierrors.IsNotFound(err) {
		return changed, err
	}
	sa, err := c.kube.CoreV1().ServiceAccounts(c.namespace).Get(ctx, efs.NodeServiceAccount, metav1.GetOptions{})
	if err == nil && disown(&sa.ObjectMeta) {
		if _, err := c.kube.CoreV1().ServiceAccounts(c.namespace).Update(ctx, sa, metav1.UpdateOptions{FieldManager: adoptionControllerName}); err != nil {
			return changed, fmt.Errorf("adopting ServiceAccount %s/%s: %w", c.namespace, efs.NodeServiceAccount, err)
		}
		changed = append(changed, "ServiceAccount "+efs.NodeServiceAccount)
	} else if err != nil && !apierrors.IsNotFound(err) {
		return changed, err
	}
	removed, err := c.removeUnusableStorageClass(ctx, recorder)
	if err != nil {
		return changed, err
	}
	if removed {
		changed = append(changed, "StorageClass "+efs.StorageClass)
	}
	driverChanged, err := c.prepareCSIDriver(ctx, recorder)
	if driverChanged {
		changed = append(changed, "CSIDriver "+efs.DriverName)
	}
	return changed, err
}

// removeUnusableStorageClass deletes the StorageClass efs-sc that the community operator and
// this operator's earlier releases created without parameters. The driver needs a file system
// and a provisioning mode to provision anything, so a claim on that class reached the
// provisioner only to fail; without the class, such a claim stays Pending with an event naming
// the missing class. SharedVolumes keep binding: their claims name their volume, and binding a
// named volume does not read the class. A class with parameters is an admin's and stays.
func (c *adoptionController) removeUnusableStorageClass(ctx context.Context, recorder events.Recorder) (bool, error) {
	sc, err := c.kube.StorageV1().StorageClasses().Get(ctx, efs.StorageClass, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if sc.Provisioner != efs.DriverName || len(sc.Parameters) > 0 {
		return false, nil
	}
	err = c.kube.StorageV1().StorageClasses().Delete(ctx, sc.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &sc.UID, ResourceVersion: &sc.ResourceVersion},
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing StorageClass %s, which has no parameters and cannot provision: %w", efs.StorageClass, err)
	}
	recorder.Eventf("UnusableStorageClassRemoved", "Deleted StorageClass %s: it names no EFS file system, so no claim could be provisioned from it", efs.StorageClass)
	return true, nil
}

// prepareCSIDriver lets library-go's ApplyCSIDriver update the existing CSIDriver instead of
// re-creating it: ApplyCSIDriver re-creates whenever the spec-hash annotation differs, and the
// community CSIDriver has none.
func (c *adoptionController) prepareCSIDriver(ctx context.Context, recorder events.Recorder) (bool, error) {
	existing, err := c.kube.StorageV1().CSIDrivers().Get(ctx, efs.DriverName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	required := c.csiDriver.DeepCopy()
	if err := resourceapply.SetSpecHashAnnotation(&required.ObjectMeta, required.Spec); err != nil {
		return false, err
	}
	changed := disown(&existing.ObjectMeta)
	const hashKey = "operator.openshift.io/spec-hash"
	if existing.Annotations[hashKey] != required.Annotations[hashKey] {
		if !sameCSIDriverSpec(existing.Spec, required.Spec) {
			// A different spec cannot be taken over in place; library-go re-creates the object,
			// which mounted volumes survive.
			recorder.Warningf(reasonCSIDriverMismatch, "CSIDriver %s differs from the supported driver's and will be re-created", efs.DriverName)
			return changed, c.updateCSIDriverIf(ctx, changed, existing)
		}
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		existing.Annotations[hashKey] = required.Annotations[hashKey]
		changed = true
	}
	return changed, c.updateCSIDriverIf(ctx, changed, existing)
}

func (c *adoptionController) updateCSIDriverIf(ctx context.Context, changed bool, driver *storagev1.CSIDriver) error {
	if !changed {
		return nil
	}
	if _, err := c.kube.StorageV1().CSIDrivers().Update(ctx, driver, metav1.UpdateOptions{FieldManager: adoptionControllerName}); err != nil {
		return fmt.Errorf("adopting CSIDriver %s: %w", efs.DriverName, err)
	}
	return nil
}

// sameCSIDriverSpec compares what the supported driver sets; the rest is API defaults.
func sameCSIDriverSpec(existing, required storagev1.CSIDriverSpec) bool {
	deref := func(b *bool) bool { return b != nil && *b }
	return deref(existing.AttachRequired) == deref(required.AttachRequired) &&
		deref(existing.PodInfoOnMount) == deref(required.PodInfoOnMount)
}

// disown removes the community operator's ownership: its label and the ownerReferences to the
// SharedVolume CRD. It reports whether anything changed.
func disown(meta *metav1.ObjectMeta) bool {
	changed := false
	if _, ok := meta.Labels[efs.CommunityOwnedLabel]; ok {
		delete(meta.Labels, efs.CommunityOwnedLabel)
		changed = true
	}
	refs := slices.DeleteFunc(slices.Clone(meta.OwnerReferences), func(r metav1.OwnerReference) bool {
		return r.Kind == "CustomResourceDefinition" && r.Name == efs.SharedVolumeCRD
	})
	if len(refs) != len(meta.OwnerReferences) {
		meta.OwnerReferences = refs
		changed = true
	}
	return changed
}

// removeCommunityLeftovers deletes the community SCC once the node DaemonSet is rolled out with
// the supported driver; until then the running community pods may still need it.
func (c *adoptionController) removeCommunityLeftovers(ctx context.Context, recorder events.Recorder) (bool, error) {
	_, err := c.dynamic.Resource(sccGVR).Get(ctx, efs.CommunitySCC, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	ds, err := c.daemonSets.Lister().DaemonSets(c.namespace).Get(efs.NodeDaemonSet)
	if err != nil || !rolledOut(ds) {
		return false, nil
	}
	if err := c.dynamic.Resource(sccGVR).Delete(ctx, efs.CommunitySCC, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("deleting the community SCC %s: %w", efs.CommunitySCC, err)
	}
	recorder.Eventf("CommunitySCCRemoved", "Deleted SecurityContextConstraints %s: the supported driver runs on every node", efs.CommunitySCC)
	return true, nil
}

// rolledOut reports whether a DaemonSet's current template runs, available, on every node.
func rolledOut(ds *appsv1.DaemonSet) bool {
	st := ds.Status
	return st.ObservedGeneration >= ds.Generation &&
		st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
		st.NumberAvailable == st.DesiredNumberScheduled
}
