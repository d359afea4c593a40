package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
)

// Reasons of the warning events sent when the controller mends what was done behind a
// SharedVolume's back.
const (
	// ReasonVolumeEdited: a hand edit of the SharedVolume's PV or PVC was put back.
	ReasonVolumeEdited = "VolumeEdited"
	// ReasonClaimRecreated: the SharedVolume's PVC was deleted and was made again.
	ReasonClaimRecreated = "ClaimRecreated"
)

// refusal says why a SharedVolume cannot have the PV and PVC of its names, and the reason of
// its Ready condition, or returns "" when each either does not exist yet or is its own. It is
// decided before anything is made: a PV made while someone else's claim holds the claim's name
// would be pre-bound to that claim and hand it the access point. pvErr and pvcErr are the errors
// reading them: nil or NotFound.
func refusal(sv *sharedvolumev1alpha1.SharedVolume, pv *corev1.PersistentVolume, pvErr error, pvc *corev1.PersistentVolumeClaim, pvcErr error) (why, reason string) {
	hasPV, hasPVC := pvErr == nil, pvcErr == nil
	// An object whose labels were removed by hand is still this SharedVolume's when the other
	// one of the pair is, and the two are bound to each other.
	pvOurs := hasPV && (volumes.OwnedBy(pv, sv) || hasPVC && volumes.OwnedBy(pvc, sv) && boundToEachOther(pv, pvc))
	pvcOurs := hasPVC && (volumes.OwnedBy(pvc, sv) || hasPV && volumes.OwnedBy(pv, sv) && boundToEachOther(pv, pvc))
	switch {
	case hasPV && !pvOurs:
		return fmt.Sprintf("PersistentVolume %s already exists and belongs to %s: rename this SharedVolume", pv.Name, volumes.Owner(pv)), ReasonCollision
	case hasPV && !volumes.MountsSameAccessPoint(pv, sv):
		return mismatch(pv, sv), ReasonMismatch
	case hasPVC && !pvcOurs:
		return fmt.Sprintf("PersistentVolumeClaim %s/%s already exists and belongs to %s: rename this SharedVolume", pvc.Namespace, pvc.Name, volumes.Owner(pvc)), ReasonCollision
	}
	return "", ""
}

// boundToEachOther reports whether a PV and a PVC name each other, the PV the PVC's UID.
func boundToEachOther(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	return ref != nil && pvc.UID != "" && ref.Namespace == pvc.Namespace && ref.Name == pvc.Name && ref.UID == pvc.UID && pvc.Spec.VolumeName == pv.Name
}

// claimRecreated tells the SharedVolume's readers that its PVC, deleted behind its back, was
// made again: pv, read before, still names the deleted one.
func (r *Reconciler) claimRecreated(sv *sharedvolumev1alpha1.SharedVolume, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) {
	if r.Recorder != nil && pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != "" {
		r.Recorder.Eventf(sv, corev1.EventTypeWarning, ReasonClaimRecreated,
			"PersistentVolumeClaim %s was deleted: made it again and bound it to PersistentVolume %s, whose data is kept", pvc.Name, pv.Name)
	}
}

// repair puts back hand edits of a SharedVolume's own PV and PVC: their ownership labels, and
// the fields of the PV that keep it bound to the PVC (a PVC made again would bind to nothing
// else) and keep its data (reclaimPolicy). The API server itself refuses edits of what the PV
// mounts and of either's volume mode, and of the PVC's spec. It returns why the SharedVolume
// fails when an edit must not be put back: the PV given to another claim that asks for it is
// not taken back from a claim that may be using it.
func (r *Reconciler) repair(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) (string, error) {
	if pv.UID == "" || pvc.UID == "" {
		// Made by another reconcile meanwhile (the create found it existing) and not read
		// back: without the PVC's UID a claimRef cannot be judged. The next reconcile repairs.
		return "", nil
	}
	claimRef, claimEdit, why, err := r.claimRefFor(ctx, pv, pvc)
	if err != nil || why != "" {
		return why, err
	}
	want := volumes.PV(sv)
	edited := pv.DeepCopy()
	edits := labelEdits(edited, volumes.OwnerLabels(sv))
	spec := &edited.Spec
	if spec.PersistentVolumeReclaimPolicy != want.Spec.PersistentVolumeReclaimPolicy {
		edits = append(edits, fmt.Sprintf("spec.persistentVolumeReclaimPolicy from %s to %s", spec.PersistentVolumeReclaimPolicy, want.Spec.PersistentVolumeReclaimPolicy))
		spec.PersistentVolumeReclaimPolicy = want.Spec.PersistentVolumeReclaimPolicy
	}
	if got := spec.Capacity[corev1.ResourceStorage]; got.Cmp(volumes.Size) != 0 {
		edits = append(edits, fmt.Sprintf("spec.capacity.storage from %s to %s", got.String(), volumes.Size.String()))
		spec.Capacity = want.Spec.Capacity
	}
	if spec.StorageClassName != want.Spec.StorageClassName {
		edits = append(edits, fmt.Sprintf("spec.storageClassName from %s to %s", orNone(spec.StorageClassName), want.Spec.StorageClassName))
		spec.StorageClassName = want.Spec.StorageClassName
	}
	if !slices.Equal(spec.AccessModes, want.Spec.AccessModes) {
		edits = append(edits, fmt.Sprintf("spec.accessModes from %v to %v", spec.AccessModes, want.Spec.AccessModes))
		spec.AccessModes = want.Spec.AccessModes
	}
	if claimRef != nil {
		spec.ClaimRef = claimRef
		if claimEdit != "" {
			edits = append(edits, claimEdit)
		}
	}
	// A claimRef put back without an edit to tell is the UID of a claim made again.
	if err := r.put(ctx, sv, pv, edited, len(edits) > 0 || claimRef != nil, edits); err != nil {
		return "", err
	}
	editedPVC := pvc.DeepCopy()
	pvcEdits := labelEdits(editedPVC, volumes.OwnerLabels(sv))
	return "", r.put(ctx, sv, pvc, editedPVC, len(pvcEdits) > 0, pvcEdits)
}

// put writes edited over obj when it changed anything, and sends the VolumeEdited event listing
// the edits put back. The write is refused with a conflict when obj changed since it was read.
// Whether anything changed is known from the edits: comparing the objects whole was 6% of the
// operator's CPU while it made 1,000 pairs.
func (r *Reconciler) put(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, obj, edited client.Object, changed bool, edits []string) error {
	if !changed {
		return nil
	}
	kind := "PersistentVolume"
	if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		kind = "PersistentVolumeClaim"
	}
	patch := client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{})
	if err := r.Patch(ctx, edited, patch, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("putting back %s %s: %w", kind, obj.GetName(), err)
	}
	if r.Recorder != nil && len(edits) > 0 {
		r.Recorder.Eventf(sv, corev1.EventTypeWarning, ReasonVolumeEdited,
			"%s %s was edited by hand; put back %s: the controller keeps a SharedVolume's volume and claim as it made them", kind, obj.GetName(), strings.Join(edits, " and "))
	}
	return nil
}

// claimRefFor returns the claimRef the PV must have to stay bound to the SharedVolume's PVC and
// a description of the edit it puts back, or nil when the PV's is right. A claimRef naming the
// PVC with another UID is no edit: the PVC was deleted and made again, and a PV kept with Retain
// names the deleted one until told otherwise, so the binder would never bind the new one. A
// claimRef pointed at another claim is put back unless that claim exists and asks for this PV:
// then it returns why the SharedVolume fails.
func (r *Reconciler) claimRefFor(ctx context.Context, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) (ref *corev1.ObjectReference, edit, why string, err error) {
	cur := pv.Spec.ClaimRef
	if cur != nil && cur.Namespace == pvc.Namespace && cur.Name == pvc.Name {
		if cur.UID == "" || cur.UID == pvc.UID {
			return nil, "", "", nil
		}
		ref = cur.DeepCopy()
		ref.UID, ref.ResourceVersion = pvc.UID, ""
		return ref, "", "", nil
	}
	was := "(none)"
	if cur != nil {
		was = cur.Namespace + "/" + cur.Name
		other := &corev1.PersistentVolumeClaim{}
		switch err := r.getAny(ctx, client.ObjectKey{Namespace: cur.Namespace, Name: cur.Name}, other); {
		case err == nil && other.Spec.VolumeName == pv.Name:
			return nil, "", fmt.Sprintf("PersistentVolume %s was given to claim %s by an edit of its spec.claimRef, and that claim asks for it: a volume is not taken back from a claim that may be using it. Delete claim %s, and the volume is bound to %s/%s again",
				pv.Name, was, was, pvc.Namespace, pvc.Name), nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, "", "", fmt.Errorf("reading PersistentVolumeClaim %s: %w", was, err)
		}
	}
	ref = &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID}
	return ref, fmt.Sprintf("spec.claimRef from %s to %s/%s", was, pvc.Namespace, pvc.Name), "", nil
}

// labelEdits sets the labels of want on obj and describes each it changed, in key order.
func labelEdits(obj client.Object, want map[string]string) []string {
	labels := obj.GetLabels()
	var edits []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got, ok := labels[k]; !ok || got != want[k] {
			if labels == nil {
				labels = map[string]string{}
			}
			was := "(none)"
			if ok {
				was = got
			}
			edits = append(edits, fmt.Sprintf("metadata.labels.%s from %s to %s", k, was, want[k]))
			labels[k] = want[k]
		}
	}
	obj.SetLabels(labels)
	return edits
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
