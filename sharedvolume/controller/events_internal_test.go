package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestVolumeEvents: a SharedVolume is reconciled for the updates of its PV and PVC that change
// what its reconcile reads, and not for the binder's other writes nor for the creations it made.
func TestVolumeEvents(t *testing.T) {
	labels := map[string]string{"a": "b"}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv", UID: "pv-uid", Labels: labels},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef:                      &corev1.ObjectReference{Namespace: "ns", Name: "pvc"},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pvc", UID: "pvc-uid", Labels: labels},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv"},
	}
	editPV := func(f func(*corev1.PersistentVolume)) client.Object { c := pv.DeepCopy(); f(c); return c }
	editPVC := func(f func(*corev1.PersistentVolumeClaim)) client.Object { c := pvc.DeepCopy(); f(c); return c }
	boundPV := editPV(func(v *corev1.PersistentVolume) { v.Spec.ClaimRef.UID = "pvc-uid" })
	for _, tc := range []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"the binder fills in the claim's UID", pv, boundPV, false},
		{"the binder sets the PV's phase", pv, editPV(func(v *corev1.PersistentVolume) { v.Status.Phase = corev1.VolumeBound }), false},
		{"the binder annotates the PV", pv, editPV(func(v *corev1.PersistentVolume) { v.Annotations = map[string]string{"x": "y"} }), false},
		{"the claimRef pointed elsewhere", pv, editPV(func(v *corev1.PersistentVolume) { v.Spec.ClaimRef.Name = "other" }), true},
		{"the claim's UID replaced", boundPV, editPV(func(v *corev1.PersistentVolume) { v.Spec.ClaimRef.UID = "new" }), true},
		{"the reclaim policy edited", pv, editPV(func(v *corev1.PersistentVolume) {
			v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
		}), true},
		{"a PV label removed", pv, editPV(func(v *corev1.PersistentVolume) { v.Labels = nil }), true},
		{"the PV deleted", pv, editPV(func(v *corev1.PersistentVolume) { v.DeletionTimestamp = &metav1.Time{} }), true},
		{"the binder annotates the claim", pvc, editPVC(func(c *corev1.PersistentVolumeClaim) { c.Annotations = map[string]string{"x": "y"} }), false},
		{"the claim bound", pvc, editPVC(func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimBound }), true},
		{"the claim's volume changed", pvc, editPVC(func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "other" }), true},
		{"a claim label edited", pvc, editPVC(func(c *corev1.PersistentVolumeClaim) { c.Labels = map[string]string{"a": "c"} }), true},
		{"the claim made again", pvc, editPVC(func(c *corev1.PersistentVolumeClaim) { c.UID = "again" }), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := volumeEvents.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
				t.Errorf("update passed on = %v, want %v", got, tc.want)
			}
		})
	}
	if volumeEvents.Create(event.CreateEvent{Object: pv}) {
		t.Error("a PV's creation was passed on")
	}
	if !volumeEvents.Delete(event.DeleteEvent{Object: pvc}) {
		t.Error("a PVC's deletion was not passed on")
	}
}

// TestClaimsCurrent: the claim cache is trusted with a claim's absence only while its watch
// delivers events, whichever kind they are.
func TestClaimsCurrent(t *testing.T) {
	r := &Reconciler{}
	if r.claimsCurrent() {
		t.Error("current before any event")
	}
	note := noteEvents(&r.lastClaimEvent)
	pvc := &corev1.PersistentVolumeClaim{}
	for name, deliver := range map[string]func() bool{
		"create":  func() bool { return note.Create(event.CreateEvent{Object: pvc}) },
		"update":  func() bool { return note.Update(event.UpdateEvent{ObjectOld: pvc, ObjectNew: pvc}) },
		"delete":  func() bool { return note.Delete(event.DeleteEvent{Object: pvc}) },
		"generic": func() bool { return note.Generic(event.GenericEvent{Object: pvc}) },
	} {
		r.lastClaimEvent.Store(time.Now().Add(-claimsFresh).UnixNano())
		if r.claimsCurrent() {
			t.Errorf("%s: current with the last event %v ago", name, claimsFresh)
		}
		if !deliver() {
			t.Errorf("%s: the event was not passed on", name)
		}
		if !r.claimsCurrent() {
			t.Errorf("%s: not current right after an event", name)
		}
	}
}
