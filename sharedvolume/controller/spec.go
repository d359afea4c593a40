package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
)

// keepSpec puts back the spec of a SharedVolume whose PV exists, when the spec was edited since
// the PV was made: the community operator documented the spec as immutable and reverted edits
// the same way, and Kubernetes older than 1.25 ignores the CRD's rule that refuses them. The PV,
// which a pod may have mounted, is never re-pointed: its volumeHandle is the record of the spec.
// It returns the SpecReverted condition to set, or nil when there was nothing to revert or the
// revert was refused (ensure then reports the mismatch).
func (r *Reconciler) keepSpec(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, pv *corev1.PersistentVolume) (*metav1.Condition, error) {
	recorded, ok := volumes.RecordedSpec(pv)
	if !ok || !volumes.OwnedBy(pv, sv) || recorded == sv.Spec {
		return nil, nil
	}
	edits := strings.Join(volumes.SpecEdits(recorded, sv.Spec), " and ")
	edited := sv.Spec
	patch := client.MergeFromWithOptions(sv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	sv.Spec = recorded
	if err := r.Patch(ctx, sv, patch, client.FieldOwner(FieldManager)); err != nil {
		sv.Spec = edited
		if apierrors.IsInvalid(err) {
			// The API server refuses the revert itself: a spec edited while nothing enforced
			// the rule (before the CRD with the rule was installed) can no longer change.
			return nil, nil
		}
		return nil, fmt.Errorf("reverting the edit of %s: %w", edits, err)
	}
	message := fmt.Sprintf("the edit of %s was reverted: the spec is immutable; PersistentVolume %s mounts %s and is never re-pointed. Create a new SharedVolume to use another file system or access point",
		edits, pv.Name, pv.Spec.CSI.VolumeHandle)
	if r.Recorder != nil {
		r.Recorder.Event(sv, corev1.EventTypeWarning, ReasonSpecEdited, message)
	}
	// sv now holds the server's answer, with the generation of the reverted spec.
	return &metav1.Condition{
		Type: ConditionSpecReverted, Status: metav1.ConditionTrue, Reason: ReasonSpecEdited, Message: message, ObservedGeneration: sv.Generation,
	}, nil
}

// mismatch says why a SharedVolume's own PV does not mount what its spec names.
func mismatch(pv *corev1.PersistentVolume, sv *sharedvolumev1alpha1.SharedVolume) string {
	mounts := "no EFS volume"
	if pv.Spec.CSI != nil {
		mounts = pv.Spec.CSI.VolumeHandle
	}
	if _, ok := volumes.RecordedSpec(pv); ok {
		// keepSpec could not put the spec back: the API server refused it.
		return fmt.Sprintf("PersistentVolume %s mounts %s, not %s::%s, and the spec could not be reverted (the API server refuses spec changes): delete this SharedVolume and create a new one",
			pv.Name, mounts, sv.Spec.FileSystemID, sv.Spec.AccessPointID)
	}
	return fmt.Sprintf("PersistentVolume %s mounts %s, not %s::%s", pv.Name, mounts, sv.Spec.FileSystemID, sv.Spec.AccessPointID)
}
