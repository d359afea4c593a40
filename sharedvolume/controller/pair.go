package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
)

// ensure creates or adopts the PV and PVC and returns the status they give, and how long to
// hold that status back (firstStatusWait). pv is the PV read by Reconcile, and pvErr the error
// reading it: nil or NotFound.
func (r *Reconciler) ensure(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, pv *corev1.PersistentVolume, pvErr error) (sharedvolumev1alpha1.SharedVolumeStatus, time.Duration, error) {
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: sv.Namespace}, &ns); err != nil {
		return sharedvolumev1alpha1.SharedVolumeStatus{}, 0, fmt.Errorf("reading namespace %s: %w", sv.Namespace, err)
	}
	if ok, why := volumes.Allowed(&ns, sv); !ok {
		return failed(sv, ReasonNotAllowed, why), 0, nil
	}
	if why := volumes.NameProblem(sv); why != "" {
		return failed(sv, ReasonNameTooLong, why), 0, nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	pvcErr := r.readClaim(ctx, client.ObjectKey{Namespace: sv.Namespace, Name: volumes.PVCName(sv)}, pvc)
	if pvcErr != nil && !apierrors.IsNotFound(pvcErr) {
		return sharedvolumev1alpha1.SharedVolumeStatus{}, 0, fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", sv.Namespace, volumes.PVCName(sv), pvcErr)
	}
	if why, reason := refusal(sv, pv, pvErr, pvc, pvcErr); why != "" {
		return r.refuse(ctx, sv, pv, pvErr, why, reason)
	}
	if ns.DeletionTimestamp != nil && (pvErr != nil || pvcErr != nil) {
		// Nothing can be made in a namespace being deleted, and the SharedVolume goes with it:
		// its deletion removes what it has.
		return *sv.Status.DeepCopy(), 0, nil
	}
	// The volume is made first, reserved for the claim by name (spec.claimRef without a UID,
	// Kubernetes' way to pre-bind a static volume), and the claim then asks for it by name. The
	// binder binds such a claim as soon as it sees it, because it finds the volume already in
	// its cache. Made the other way round, a volume naming its claim's UID was bound only at the
	// binder's next periodic pass, which comes every 15 s (--pvclaimbinder-sync-period): a
	// single SharedVolume took 10 to 15 s to be Ready. The binder writes the claim's UID into
	// the volume when it binds, and from then on no other claim can take it.
	if apierrors.IsNotFound(pvErr) {
		var stop *sharedvolumev1alpha1.SharedVolumeStatus
		var err error
		if pv, stop, err = r.createVolume(ctx, sv, pvc, pvcErr); stop != nil || err != nil {
			return orEmpty(stop), 0, err
		}
	}
	if apierrors.IsNotFound(pvcErr) {
		var stop *sharedvolumev1alpha1.SharedVolumeStatus
		var err error
		if pvc, stop, err = r.createClaim(ctx, sv, pv); stop != nil || err != nil {
			return orEmpty(stop), 0, err
		}
	}
	if pvc.Spec.VolumeName != pv.Name {
		return failed(sv, ReasonMismatch, fmt.Sprintf("PersistentVolumeClaim %s/%s is bound to %s, not %s", pvc.Namespace, pvc.Name, pvc.Spec.VolumeName, pv.Name)), 0, nil
	}
	if why, err := r.repair(ctx, sv, pv, pvc); err != nil || why != "" {
		return failed(sv, ReasonMismatch, why), 0, err
	}
	return r.claimStatus(ctx, sv, pv, pvc)
}

// createVolume makes the SharedVolume's PV. A status is where the SharedVolume stops: the API
// server refused the volume, or the name is someone else's.
func (r *Reconciler) createVolume(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, pvc *corev1.PersistentVolumeClaim, pvcErr error) (*corev1.PersistentVolume, *sharedvolumev1alpha1.SharedVolumeStatus, error) {
	pv := volumes.PV(sv)
	err := r.Create(ctx, pv, client.FieldOwner(FieldManager))
	switch {
	case apierrors.IsForbidden(err):
		// Admission refuses EFS volumes while the driver is removed, and says what lifts the
		// refusal; a Pending SharedVolume is tried again every pendingRecheck.
		status := sharedvolumev1alpha1.SharedVolumeStatus{Phase: sharedvolumev1alpha1.SharedVolumePending}
		setReady(&status, sv, metav1.ConditionFalse, ReasonVolumeRefused, fmt.Sprintf("the API server refused PersistentVolume %s (tried again every %v): %v", pv.Name, pendingRecheck, err))
		return nil, &status, nil
	case apierrors.IsAlreadyExists(err):
		if err := r.serverCopy(ctx, client.ObjectKeyFromObject(pv), pv); err != nil {
			return nil, nil, fmt.Errorf("reading PersistentVolume %s: %w", pv.Name, err)
		}
		if why, reason := refusal(sv, pv, nil, pvc, pvcErr); why != "" {
			return nil, ptr.To(failed(sv, reason, why)), nil
		}
	case err != nil:
		return nil, nil, fmt.Errorf("creating PersistentVolume %s: %w", pv.Name, err)
	}
	return pv, nil, nil
}

// createClaim makes the SharedVolume's PVC, asking for pv. A status is where the SharedVolume
// stops: the name is someone else's.
func (r *Reconciler) createClaim(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, *sharedvolumev1alpha1.SharedVolumeStatus, error) {
	pvc := volumes.PVC(sv)
	switch err := r.Create(ctx, pvc, client.FieldOwner(FieldManager)); {
	case apierrors.IsAlreadyExists(err):
		// Made since it was read: by another reconcile of this SharedVolume, or by someone
		// else, whose claim the volume must not stay reserved for.
		if err := r.serverCopy(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return nil, nil, fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
		if why, reason := refusal(sv, pv, nil, pvc, nil); why != "" {
			status, _, err := r.refuse(ctx, sv, pv, nil, why, reason)
			return nil, &status, err
		}
	case err != nil:
		return nil, nil, fmt.Errorf("creating PersistentVolumeClaim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	default:
		r.lastPair.Store(&pairMade{sharedVolume: client.ObjectKeyFromObject(sv), at: time.Now()})
		r.claimRecreated(sv, pv, pvc)
	}
	return pvc, nil, nil
}

// claimStatus is the status the bound, or binding, claim gives, and how long to hold it back.
// A claim the binder seems to have left waiting is read again from the API server, whose copy
// may be ahead of the cache.
func (r *Reconciler) claimStatus(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) (sharedvolumev1alpha1.SharedVolumeStatus, time.Duration, error) {
	working := r.binderWorking()
	if pvc.Status.Phase == corev1.ClaimBound && sv.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady {
		r.lastBind.Store(time.Now().UnixNano())
	}
	if pvc.Status.Phase != corev1.ClaimBound && !working && time.Since(claimWaitingSince(sv, pvc)) > pendingRecheck && r.Reader != nil {
		fresh := &corev1.PersistentVolumeClaim{}
		if err := r.serverCopy(ctx, client.ObjectKeyFromObject(pvc), fresh); err != nil {
			return sharedvolumev1alpha1.SharedVolumeStatus{}, 0, fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
		pvc = fresh
	}
	status := sharedvolumev1alpha1.SharedVolumeStatus{
		ClaimRef: &corev1.TypedLocalObjectReference{APIGroup: ptr.To(""), Kind: "PersistentVolumeClaim", Name: pvc.Name},
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		status.Phase = sharedvolumev1alpha1.SharedVolumeReady
		setReady(&status, sv, metav1.ConditionTrue, ReasonBound, fmt.Sprintf("PersistentVolumeClaim %s is bound to %s", pvc.Name, pv.Name))
		return status, 0, nil
	}
	status.Phase = sharedvolumev1alpha1.SharedVolumePending
	setReady(&status, sv, metav1.ConditionFalse, ReasonBinding, fmt.Sprintf("waiting for PersistentVolumeClaim %s to bind to %s", pvc.Name, pv.Name))
	return status, firstStatusWait(sv, status, pvc.CreationTimestamp.Time, working), nil
}

func orEmpty(status *sharedvolumev1alpha1.SharedVolumeStatus) sharedvolumev1alpha1.SharedVolumeStatus {
	if status == nil {
		return sharedvolumev1alpha1.SharedVolumeStatus{}
	}
	return *status
}

// refuse returns the Failed status of a refusal. When the refusal is that someone else's claim
// holds the claim name, and this SharedVolume's PV is reserved for that name and not bound yet,
// the PV is deleted first: the binder would bind that claim to it and hand it the access point.
// The claim name is checked before the PV is made, but against a cache that can lag by the
// moments its watch takes, as the API server's own cache lags etcd.
func (r *Reconciler) refuse(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, pv *corev1.PersistentVolume, pvErr error, why, reason string) (sharedvolumev1alpha1.SharedVolumeStatus, time.Duration, error) {
	ref := pv.Spec.ClaimRef
	if reason == ReasonCollision && pvErr == nil && volumes.OwnedBy(pv, sv) && ref != nil && ref.UID == "" &&
		ref.Namespace == sv.Namespace && ref.Name == volumes.PVCName(sv) && pv.DeletionTimestamp == nil {
		if err := r.Delete(ctx, pv, client.Preconditions{UID: ptr.To(pv.UID)}); err != nil && !apierrors.IsNotFound(err) {
			return sharedvolumev1alpha1.SharedVolumeStatus{}, 0, fmt.Errorf("deleting PersistentVolume %s, reserved for a claim that is not this SharedVolume's: %w", pv.Name, err)
		}
		if r.Recorder != nil {
			r.Recorder.Eventf(sv, corev1.EventTypeWarning, ReasonReservedVolumeDeleted,
				"deleted PersistentVolume %s: it was reserved for claim %s/%s, which is not this SharedVolume's", pv.Name, ref.Namespace, ref.Name)
		}
	}
	return failed(sv, reason, why), 0, nil
}
