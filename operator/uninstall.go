package operator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/operator/assets"
)

const uninstallControllerName = "AWSEFSDriverUninstall"

// Reasons of the uninstall conditions.
const (
	reasonInstalled     = "AsExpected"
	reasonVolumesInUse  = "VolumesInUse"
	reasonRemoving      = "RemovingDriver"
	reasonRemoved       = "DriverRemoved"
	reasonRemovalFailed = "RemovalFailed"
)

// maxListedVolumes bounds how many blocking PersistentVolumes a condition or event names.
const maxListedVolumes = 10

// operandObject is one object the driver consists of.
type operandObject struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

func (o operandObject) String() string {
	if o.namespace == "" {
		return o.gvk.Kind + " " + o.name
	}
	return o.gvk.Kind + " " + o.namespace + "/" + o.name
}

// uninstallController removes the driver when the ClusterCSIDriver is deleted or Removed, but
// only once no PersistentVolume of the EFS driver is left: removing a driver under mounted
// volumes strands them. While volumes remain, the gate shows the operand controllers a Managed
// CR, so the driver keeps running; the conditions and an event name the volumes.
type uninstallController struct {
	operatorClient v1helpers.OperatorClientWithFinalizers
	kube           kubernetes.Interface
	dynamic        dynamic.Interface
	mapper         meta.RESTMapper
	objects        []operandObject
	gate           *gate
	fence          *removalFence
	// revokedAt is when a removal was last stopped; the fence stays up for settleTime after.
	revokedAt time.Time
	// stopped is set while a removal that a volume stopped waits for the volumes to go: the
	// conditions keep saying so until it resumes or the CR is Managed again.
	stopped bool
	// goneSince is when the operand was first seen fully removed. A controller whose sync
	// started before removal was allowed may still write one object; the finalizer is released
	// only after the operand stayed gone for settleTime.
	goneSince time.Time
}

const settleTime = 2 * time.Second

func newUninstallController(c *uninstallController, recorder events.Recorder) factory.Controller {
	return factory.New().
		WithInformers(c.operatorClient.Informer()).
		WithSync(c.sync).
		ResyncEvery(time.Minute).
		ToController(uninstallControllerName, recorder)
}

// operandObjects lists every object of the driver: the manifests the operator applies and the
// community driver's SCC.
func operandObjects(namespace string) ([]operandObject, error) {
	read := assets.For(namespace)
	var objects []operandObject
	for _, f := range assets.OperandFiles {
		raw, err := read(f)
		if err != nil {
			return nil, err
		}
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return nil, fmt.Errorf("asset %s: %w", f, err)
		}
		objects = append(objects, operandObject{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()})
	}
	return append(objects, operandObject{gvk: sccGVR.GroupVersion().WithKind("SecurityContextConstraints"), name: efs.CommunitySCC}), nil
}

func (c *uninstallController) sync(ctx context.Context, syncCtx factory.SyncContext) error {
	spec, status, _, err := c.operatorClient.GetOperatorState()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	objMeta, err := c.operatorClient.GetObjectMeta()
	if err != nil {
		return err
	}
	deleting := objMeta.DeletionTimestamp != nil
	if !deleting && spec.ManagementState != operatorv1.Removed {
		c.fence.open()
		c.stopped = false
		if c.gate.setRemovalAllowed(false) || (c.revokedAt.IsZero() && uninstallReason(status) == reasonRemoving) {
			c.revokedAt = time.Now()
		}
		// RemovingDriver keeps the fence up. A library-go controller that was shown Removed a
		// moment ago may still be deleting: the fence opens only once it is done.
		if wait := settleTime - time.Since(c.revokedAt); uninstallReason(status) == reasonRemoving && wait > 0 {
			syncCtx.Queue().AddAfter(syncCtx.QueueKey(), wait)
			return nil
		}
		if spec.ManagementState == operatorv1.Managed {
			if err := v1helpers.EnsureFinalizer(ctx, c.operatorClient, uninstallControllerName); err != nil {
				return err
			}
		}
		return c.report(ctx, objMeta.Generation, operatorv1.ConditionFalse, operatorv1.ConditionFalse, reasonInstalled, "")
	}
	c.revokedAt = time.Time{}

	present, err := c.present(ctx)
	if err != nil {
		return err
	}
	if len(present) > 0 {
		if ok, err := c.mayRemove(ctx, syncCtx, objMeta.Generation, deleting, status); !ok || err != nil {
			return err
		}
	}
	c.gate.setRemovalAllowed(true)
	c.stopped = false
	if len(present) > 0 {
		c.goneSince = time.Time{}
		err := c.delete(ctx, present)
		if errors.Is(err, errVolumeAppeared) {
			// The next round counts the volume, stops the removal and restores the driver.
			syncCtx.Queue().Add(syncCtx.QueueKey())
			return nil
		}
		if err != nil {
			return c.report(ctx, objMeta.Generation, operatorv1.ConditionTrue, operatorv1.ConditionTrue, reasonRemovalFailed, err.Error())
		}
		syncCtx.Queue().AddAfter(syncCtx.QueueKey(), time.Second)
		return c.report(ctx, objMeta.Generation, operatorv1.ConditionFalse, operatorv1.ConditionTrue, reasonRemoving, fmt.Sprintf("removing %d objects", len(present)))
	}
	if c.goneSince.IsZero() {
		c.goneSince = time.Now()
	}
	if wait := settleTime - time.Since(c.goneSince); wait > 0 {
		syncCtx.Queue().AddAfter(syncCtx.QueueKey(), wait)
		return nil
	}
	if err := c.report(ctx, objMeta.Generation, operatorv1.ConditionFalse, operatorv1.ConditionFalse, reasonRemoved, "the AWS EFS CSI driver is removed"); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if deleting {
		return v1helpers.RemoveFinalizer(ctx, c.operatorClient, uninstallControllerName)
	}
	return nil
}

// mayRemove decides whether a round of removal may delete: never while an EFS volume exists,
// and the first round only once the removal fence refuses new ones. It reports, and requeues,
// what it waits for.
func (c *uninstallController) mayRemove(ctx context.Context, syncCtx factory.SyncContext, generation int64, deleting bool, status *operatorv1.OperatorStatus) (bool, error) {
	if c.gate.removalAllowed.Load() {
		// Volumes are counted before every round, not only before the first: one that got in
		// (on a cluster without the fence) stops the removal, and the gate shows the operand
		// controllers a Managed CR again, which puts back what was removed.
		blocked, err := c.blockedByVolumes(ctx, syncCtx, generation, deleting)
		return !blocked && err == nil, err
	}
	// Removed or deleted, the driver takes no new volumes, whether or not old ones hold back its
	// removal. The fence goes up before a removal; one taken down by hand during it is back at
	// the next.
	fenced, err := c.fence.ensure(ctx, syncCtx.Recorder())
	if err != nil {
		return false, c.report(ctx, generation, operatorv1.ConditionTrue, operatorv1.ConditionTrue, reasonRemovalFailed, err.Error())
	}
	if blocked, err := c.blockedByVolumes(ctx, syncCtx, generation, deleting); blocked || err != nil {
		return false, err
	}
	if fenced {
		// RemovingDriver is part of what the fence refuses on: it keeps refusing if the CR is set
		// back to Managed while a round of deletes is under way.
		if uninstallReason(status) != reasonRemoving {
			msg := "refusing new EFS PersistentVolumes before the AWS EFS CSI driver is removed"
			if err := c.report(ctx, generation, operatorv1.ConditionFalse, operatorv1.ConditionTrue, reasonRemoving, msg); err != nil {
				return false, err
			}
		}
		wait, err := c.fence.settle(ctx)
		if err != nil {
			return false, c.report(ctx, generation, operatorv1.ConditionTrue, operatorv1.ConditionTrue, reasonRemovalFailed, err.Error())
		}
		if wait > 0 {
			syncCtx.Queue().AddAfter(syncCtx.QueueKey(), wait)
			return false, nil
		}
		// The last count: from now on no volume can appear.
		if blocked, err := c.blockedByVolumes(ctx, syncCtx, generation, deleting); blocked || err != nil {
			return false, err
		}
	}
	syncCtx.Recorder().Eventf(reasonRemoving, "No EFS PersistentVolume is left: removing the AWS EFS CSI driver")
	return true, nil
}

// blockedByVolumes counts the EFS PersistentVolumes and, while any exists, stops the removal and
// says so in the conditions and an event.
func (c *uninstallController) blockedByVolumes(ctx context.Context, syncCtx factory.SyncContext, generation int64, deleting bool) (bool, error) {
	volumes, total, err := c.efsVolumes(ctx)
	if err != nil {
		return false, err
	}
	if total == 0 {
		return false, nil
	}
	msg := fmt.Sprintf("the AWS EFS CSI driver is not removed while %d EFS PersistentVolumes exist (%s): delete them",
		total, strings.Join(volumes, ", "))
	if deleting {
		// An admin who edits the CR back to Managed expects the uninstall to stop, but
		// nothing undoes a deletion: say so, and what gets the driver back.
		msg += fmt.Sprintf(". ClusterCSIDriver %s is being deleted, and a deletion cannot be undone, not even by setting managementState back to Managed: "+
			"the driver keeps serving the volumes until they are gone, then it is removed; create the ClusterCSIDriver again afterwards to reinstall it", efs.CRName)
	} else {
		msg += ", or set managementState back to Managed"
	}
	if c.gate.setRemovalAllowed(false) {
		c.stopped = true
	}
	if c.stopped {
		msg = "removal stopped and the driver restored: " + msg
	}
	c.fence.open()
	syncCtx.Recorder().Warningf(reasonVolumesInUse, "%s", msg)
	// Volumes are not watched (there may be very many); look again soon.
	syncCtx.Queue().AddAfter(syncCtx.QueueKey(), 10*time.Second)
	return true, c.report(ctx, generation, operatorv1.ConditionTrue, operatorv1.ConditionTrue, reasonVolumesInUse, msg)
}

// uninstallReason is the reason of the uninstall controller's Progressing condition.
func uninstallReason(status *operatorv1.OperatorStatus) string {
	if status == nil {
		return ""
	}
	if c := v1helpers.FindOperatorCondition(status.Conditions, uninstallControllerName+operatorv1.OperatorStatusTypeProgressing); c != nil {
		return c.Reason
	}
	return ""
}

// report writes the controller's conditions and the generation of the CR they answer: the
// controller that decides what the driver's lifecycle is doing owns status.observedGeneration, so
// that admins and tests can tell when a change of managementState has been taken in.
func (c *uninstallController) report(ctx context.Context, generation int64, degraded, progressing operatorv1.ConditionStatus, reason, message string) error {
	status := applyoperatorv1.OperatorStatus().WithObservedGeneration(generation).WithConditions(
		condition(uninstallControllerName+operatorv1.OperatorStatusTypeDegraded, degraded, reason, message),
		condition(uninstallControllerName+operatorv1.OperatorStatusTypeProgressing, progressing, reason, message),
	)
	return c.operatorClient.ApplyOperatorStatus(ctx, uninstallControllerName, status)
}

func (c *uninstallController) resource(o operandObject) (dynamic.ResourceInterface, error) {
	mapping, err := c.mapper.RESTMapping(o.gvk.GroupKind(), o.gvk.Version)
	if err != nil {
		return nil, err
	}
	if o.namespace == "" {
		return c.dynamic.Resource(mapping.Resource), nil
	}
	return c.dynamic.Resource(mapping.Resource).Namespace(o.namespace), nil
}

// present returns the operand objects that still exist. Kinds the cluster does not serve (no
// ServiceMonitor CRD, say) have nothing to remove.
func (c *uninstallController) present(ctx context.Context) ([]operandObject, error) {
	var present []operandObject
	for _, o := range c.objects {
		r, err := c.resource(o)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if _, err := r.Get(ctx, o.name, metav1.GetOptions{}); err == nil {
			present = append(present, o)
		} else if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading %s: %w", o, err)
		}
	}
	return present, nil
}

// errVolumeAppeared stops a round of removal: a volume was created after the round counted none.
var errVolumeAppeared = errors.New("an EFS PersistentVolume was created during the removal")

// servesVolumes reports whether an operand object is one the driver's volumes depend on: its
// CSIDriver, node DaemonSet and controller Deployment.
func (o operandObject) servesVolumes() bool {
	switch o.gvk.Kind {
	case "CSIDriver", "DaemonSet", "Deployment":
		return true
	}
	return false
}

// delete deletes the objects, those that serve volumes first. The removal fence keeps new
// volumes out; where the cluster cannot enforce it, or an admin took it down, volumes are
// counted again right before each object that serves them, and one created meanwhile stops the
// round with errVolumeAppeared. Without the fence the milliseconds between such a count and the
// delete stay open.
func (c *uninstallController) delete(ctx context.Context, objects []operandObject) error {
	var serving, rest []operandObject
	for _, o := range objects {
		if o.servesVolumes() {
			serving = append(serving, o)
		} else {
			rest = append(rest, o)
		}
	}
	for _, o := range append(serving, rest...) {
		if o.servesVolumes() {
			_, total, err := c.efsVolumes(ctx)
			if err != nil {
				return err
			}
			if total > 0 {
				return errVolumeAppeared
			}
		}
		r, err := c.resource(o)
		if err != nil {
			return err
		}
		if err := r.Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", o, err)
		}
	}
	return nil
}

// efsVolumes lists the PersistentVolumes of the EFS driver, page by page: it returns up to
// maxListedVolumes names, sorted, and the total.
func (c *uninstallController) efsVolumes(ctx context.Context) ([]string, int, error) {
	var names []string
	list := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return c.kube.CoreV1().PersistentVolumes().List(ctx, opts)
	})
	err := list.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		if pv := obj.(*corev1.PersistentVolume); pv.Spec.CSI != nil && pv.Spec.CSI.Driver == efs.DriverName {
			names = append(names, pv.Name)
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	sort.Strings(names)
	total := len(names)
	if total > maxListedVolumes {
		names = append(names[:maxListedVolumes], fmt.Sprintf("and %d more", total-maxListedVolumes))
	}
	return names, total, nil
}
