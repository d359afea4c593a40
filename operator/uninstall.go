package operator

import (
	"context"
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
	spec, _, _, err := c.operatorClient.GetOperatorState()
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
		c.gate.removalAllowed.Store(false)
		if spec.ManagementState == operatorv1.Managed {
			if err := v1helpers.EnsureFinalizer(ctx, c.operatorClient, uninstallControllerName); err != nil {
				return err
			}
		}
		return c.report(ctx, objMeta.Generation, operatorv1.ConditionFalse, operatorv1.ConditionFalse, reasonInstalled, "")
	}

	present, err := c.present(ctx)
	if err != nil {
		return err
	}
	// Volumes are counted again before every round of removal, not only before the first: one
	// created while the driver is being removed stops the removal, and the gate shows the
	// operand controllers a Managed CR again, which puts back what was removed.
	if len(present) > 0 {
		volumes, total, err := c.efsVolumes(ctx)
		if err != nil {
			return err
		}
		if total > 0 {
			msg := fmt.Sprintf("the AWS EFS CSI driver is not removed while %d EFS PersistentVolumes exist (%s): delete them, or set managementState back to Managed",
				total, strings.Join(volumes, ", "))
			if c.gate.removalAllowed.Swap(false) {
				msg = "removal stopped and the driver restored: " + msg
			}
			syncCtx.Recorder().Warningf(reasonVolumesInUse, "%s", msg)
			// Volumes are not watched (there may be very many); look again soon.
			syncCtx.Queue().AddAfter(syncCtx.QueueKey(), 10*time.Second)
			return c.report(ctx, objMeta.Generation, operatorv1.ConditionTrue, operatorv1.ConditionTrue, reasonVolumesInUse, msg)
		}
		if !c.gate.removalAllowed.Load() {
			syncCtx.Recorder().Eventf(reasonRemoving, "No EFS PersistentVolume is left: removing the AWS EFS CSI driver")
		}
	}
	c.gate.removalAllowed.Store(true)
	if len(present) > 0 {
		c.goneSince = time.Time{}
		if err := c.delete(ctx, present); err != nil {
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

func (c *uninstallController) delete(ctx context.Context, objects []operandObject) error {
	for _, o := range objects {
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
