package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
)

// crdDeleting says whether the SharedVolume CRD is being deleted. It reads only the CRD's
// metadata, from the API server: the operator may get that one CRD, and a cache of it would
// need a watch on every CRD.
func (r *Reconciler) crdDeleting(ctx context.Context) (bool, error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	var reader client.Reader = r.Client
	if r.Reader != nil {
		reader = r.Reader
	}
	if err := reader.Get(ctx, client.ObjectKey{Name: efs.SharedVolumeCRD}, crd); err != nil {
		return false, fmt.Errorf("reading CustomResourceDefinition %s: %w", efs.SharedVolumeCRD, err)
	}
	return crd.DeletionTimestamp != nil, nil
}

// delete removes the PVC, then the PV, then the finalizer: the PV is only released once no
// claim can use it. Objects the SharedVolume does not own are left alone. When the SharedVolume
// CRD itself is being deleted, the API server is deleting every SharedVolume and no app team
// asked for it (OLM v1 deletes the CRDs of an extension it uninstalls): then only the finalizer
// goes, and the claims and volumes stay for the pods that use them.
func (r *Reconciler) delete(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(sv, efs.SharedVolumeFinalizer) {
		return reconcile.Result{}, nil
	}
	if sv.Status.Phase != sharedvolumev1alpha1.SharedVolumeDeleting {
		status := *sv.Status.DeepCopy()
		status.Phase = sharedvolumev1alpha1.SharedVolumeDeleting
		status.Message = ""
		setReady(&status, sv, metav1.ConditionFalse, ReasonDeleting, "removing the PersistentVolumeClaim, then the PersistentVolume")
		if err := r.writeStatus(ctx, sv, status); err != nil {
			return reconcile.Result{}, err
		}
	}
	objects := []client.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: sv.Namespace, Name: volumes.PVCName(sv)}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: volumes.PVName(sv)}},
	}
	// Only objects labelled as the SharedVolume's are deleted, and the cache holds all of those:
	// it is what is asked while they go (asking the API server each requeue cost 11 reads per
	// SharedVolume when 10,000 were deleted). Once it has neither, the API server is asked once
	// more before the finalizer goes, for an object made milliseconds before the deletion that
	// the cache's watch has not brought yet.
	cached := func(ctx context.Context, key client.ObjectKey, obj client.Object) error { return r.Get(ctx, key, obj) }
	// Asked once, and only before something would be deleted.
	uninstalling := sync.OnceValues(func() (bool, error) { return r.crdDeleting(ctx) })
scan:
	for _, get := range []func(context.Context, client.ObjectKey, client.Object) error{cached, r.getAny} {
		for _, obj := range objects {
			err := get(ctx, client.ObjectKeyFromObject(obj), obj)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return reconcile.Result{}, err
			}
			if !volumes.OwnedBy(obj, sv) {
				continue
			}
			if obj.GetDeletionTimestamp() == nil {
				uninstall, err := uninstalling()
				if err != nil {
					return reconcile.Result{}, err
				}
				if uninstall {
					if r.Recorder != nil {
						r.Recorder.Eventf(sv, corev1.EventTypeNormal, ReasonVolumesKept, "the SharedVolume CRD is being deleted: PersistentVolumeClaim %s and PersistentVolume %s stay", volumes.PVCName(sv), volumes.PVName(sv))
					}
					break scan
				}
				if err := r.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
					return reconcile.Result{}, fmt.Errorf("deleting %T %s: %w", obj, obj.GetName(), err)
				}
			}
			// Wait for it to be gone (a pod may still use the claim) before the next one.
			return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
		}
	}
	patch := client.MergeFrom(sv.DeepCopy())
	controllerutil.RemoveFinalizer(sv, efs.SharedVolumeFinalizer)
	return reconcile.Result{}, client.IgnoreNotFound(r.Patch(ctx, sv, patch, client.FieldOwner(FieldManager)))
}
