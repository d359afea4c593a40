package controller

import (
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// volumeEvents passes on the PV and PVC events a SharedVolume's reconcile acts on. The binder
// writes each pair four times as it binds it, and this controller makes both: reconciling the
// SharedVolume on every one of those events cost the operator four reconciles per pair while the
// binder works, and the second reconcile of a new SharedVolume, woken by the PV it had just made,
// read the claim from the API server because the cache did not have it yet (0.9 reads per
// SharedVolume when a thousand were caught up at once). So creations are dropped: the reconcile
// that made the object goes on with it, and a SharedVolume with no reconcile of its own to come
// has one anyway when its informer lists it. Updates pass when they change what the reconcile
// reads; deletions always pass.
var volumeEvents = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool { return volumeChanged(e.ObjectOld, e.ObjectNew) },
}

// volumeChanged reports whether an update of a SharedVolume's PV or PVC changed what its
// reconcile reads: labels, deletion, a PV's spec other than the binder filling in its claim's
// UID, a PVC's volume or phase. The binder's annotations and a PV's phase are not read.
func volumeChanged(old, new client.Object) bool {
	if !equality.Semantic.DeepEqual(old.GetLabels(), new.GetLabels()) || !old.GetDeletionTimestamp().Equal(new.GetDeletionTimestamp()) || old.GetUID() != new.GetUID() {
		return true
	}
	switch n := new.(type) {
	case *corev1.PersistentVolume:
		o, ok := old.(*corev1.PersistentVolume)
		if !ok {
			return true
		}
		oldSpec, newSpec := o.Spec, n.Spec
		if oldSpec.ClaimRef != nil && newSpec.ClaimRef != nil && oldSpec.ClaimRef.UID == "" {
			// The binder binding the volume to the claim it was reserved for.
			oldRef, newRef := *oldSpec.ClaimRef, *newSpec.ClaimRef
			oldRef.UID, oldRef.ResourceVersion, newRef.UID, newRef.ResourceVersion = "", "", "", ""
			oldSpec.ClaimRef, newSpec.ClaimRef = &oldRef, &newRef
		}
		return !equality.Semantic.DeepEqual(oldSpec, newSpec)
	case *corev1.PersistentVolumeClaim:
		o, ok := old.(*corev1.PersistentVolumeClaim)
		return !ok || o.Spec.VolumeName != n.Spec.VolumeName || o.Status.Phase != n.Status.Phase
	}
	return true
}

// noteEvents passes every event, first storing when it came (Unix nanoseconds) in last.
func noteEvents(last *atomic.Int64) predicate.Predicate {
	note := func() bool {
		last.Store(time.Now().UnixNano())
		return true
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return note() },
		UpdateFunc:  func(event.UpdateEvent) bool { return note() },
		DeleteFunc:  func(event.DeleteEvent) bool { return note() },
		GenericFunc: func(event.GenericEvent) bool { return note() },
	}
}

// noteArrivals passes every event, storing when a new SharedVolume came (Unix nanoseconds) in
// last. The informer's first list and a relist after a broken watch deliver those it already
// had as new too, which holds the workers back for arrivalGap at most.
func noteArrivals(last *atomic.Int64) predicate.Predicate {
	return predicate.Funcs{CreateFunc: func(event.CreateEvent) bool {
		last.Store(time.Now().UnixNano())
		return true
	}}
}
