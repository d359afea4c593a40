package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

func failed(sv *sharedvolumev1alpha1.SharedVolume, reason, message string) sharedvolumev1alpha1.SharedVolumeStatus {
	status := sharedvolumev1alpha1.SharedVolumeStatus{Phase: sharedvolumev1alpha1.SharedVolumeFailed, Message: message}
	setReady(&status, sv, metav1.ConditionFalse, reason, message)
	return status
}

func setReady(status *sharedvolumev1alpha1.SharedVolumeStatus, sv *sharedvolumev1alpha1.SharedVolume, s metav1.ConditionStatus, reason, message string) {
	// Keep the transition time of an unchanged condition.
	status.Conditions = append([]metav1.Condition(nil), sv.Status.Conditions...)
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: ConditionReady, Status: s, Reason: reason, Message: message, ObservedGeneration: sv.Generation,
	})
}

// writeStatus writes the status if it changed, and reports phase changes as events. The write
// is refused with a conflict when the SharedVolume changed since it was read: a status computed
// from a stale cache must not replace a newer one (a SpecReverted condition would be lost).
func (r *Reconciler) writeStatus(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume, status sharedvolumev1alpha1.SharedVolumeStatus) error {
	if equality.Semantic.DeepEqual(sv.Status, status) {
		return nil
	}
	old := sv.Status.Phase
	waited := old == "" || bindingCondition(sv.Status) != nil
	patch := client.MergeFromWithOptions(sv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	sv.Status = status
	if err := r.Status().Patch(ctx, sv, patch, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	if old != status.Phase && r.Recorder != nil {
		eventType, reason := corev1.EventTypeNormal, string(status.Phase)
		if c := meta.FindStatusCondition(status.Conditions, ConditionReady); c != nil {
			reason = c.Reason
		}
		if reason == ReasonBinding || reason == ReasonBound && waited {
			// Waiting for the binder, then bound, is the normal way to Ready, and the status
			// says so: an event for either would be one more write per SharedVolume, on the
			// API server the binder is waiting for, that tells nothing. Ready after a failure
			// or a refusal is told.
			return nil
		}
		if status.Phase == sharedvolumev1alpha1.SharedVolumeFailed {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Event(sv, eventType, reason, statusMessage(status))
	}
	return nil
}

// bindingCondition is a status's Ready condition when it says the claim waits for the binder
// (always False), or nil.
func bindingCondition(status sharedvolumev1alpha1.SharedVolumeStatus) *metav1.Condition {
	if c := meta.FindStatusCondition(status.Conditions, ConditionReady); c != nil && c.Reason == ReasonBinding {
		return c
	}
	return nil
}

func statusMessage(status sharedvolumev1alpha1.SharedVolumeStatus) string {
	if c := meta.FindStatusCondition(status.Conditions, ConditionReady); c != nil {
		return c.Message
	}
	return string(status.Phase)
}
