package controller

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// maxReadyHold is how long at most the Ready status of a SharedVolume whose claim is bound is
// held back while the controller makes other SharedVolumes' pairs (readyWait).
const maxReadyHold = 10 * time.Second

// readyWait is how long to hold back the Ready status of SharedVolume key, whose claim is bound,
// before it is looked at again. While the controller is making other SharedVolumes' claims (one
// within arrivalGap), it is held, up to maxReadyHold: an app team's burst is made into PVs and
// PVCs on an API server it saturates, where each status write is a custom-resource write more
// and a watch event for everyone watching SharedVolumes. A bound claim is what a pod mounts, so
// nothing waits on the status meanwhile but those reading it, and a claim the binder bound
// early in a burst is Ready a few seconds later instead of at once. A lone SharedVolume, whose
// own claim was the last made, is Ready at once.
func (r *Reconciler) readyWait(key types.NamespacedName) time.Duration {
	last := r.lastPair.Load()
	if last == nil || last.sharedVolume == key || time.Since(last.at) >= arrivalGap {
		return 0
	}
	first, _ := r.readyHeld.LoadOrStore(key, time.Now())
	if time.Since(first.(time.Time)) >= maxReadyHold {
		return 0
	}
	return arrivalGap
}

// maxRecheck is the longest a SharedVolume waiting for the binder goes unchecked.
const maxRecheck = 5 * time.Minute

// recheckAfter is when a Pending SharedVolume is looked at again: after pendingRecheck, and once
// it has waited for the binder for longer, after half as long as it has waited, up to
// maxRecheck. Each look at a claim still unbound reads it from the API server, in case this
// process's cache lags; a watch broken by an API server restart is back within a minute, after
// which the claim's binding arrives as an event and needs no look. At a fixed 10 s, 10,000
// SharedVolumes waiting minutes for a busy binder cost the server 30 reads each
// (BENCHMARKS.md).
func recheckAfter(status sharedvolumev1alpha1.SharedVolumeStatus) time.Duration {
	c := meta.FindStatusCondition(status.Conditions, ConditionReady)
	if c == nil || c.Reason != ReasonBinding {
		return pendingRecheck
	}
	return min(max(pendingRecheck, time.Since(c.LastTransitionTime.Time)/2), maxRecheck)
}

// pendingRecheck is how soon a Pending SharedVolume is looked at again at first, and how long a
// claim may wait to bind before it is read from the API server rather than the cache, unless
// the cache is seen to be current (binderWorking). The cache learns of a binding from its
// watch, and a watch broken by an API server restart is only re-established after client-go's
// backoff, up to a minute later.
const pendingRecheck = 10 * time.Second

// maxFirstStatusHold is how long at most the first status of a SharedVolume whose claim waits
// for a binder that is working through others is held back (firstStatusWait).
const maxFirstStatusHold = 2 * time.Minute

// firstStatusWait is how long to hold back the first status of a SharedVolume whose claim is
// made but not bound yet, counted from when the claim was made (claimMade). A claim is bound
// within a second on a cluster that is not busy, and the SharedVolume's first status is then
// Ready, its only status write. Saying Pending first costs the API server one more
// custom-resource write per SharedVolume while the binder works, and the binder is what every
// SharedVolume waits for: one request at a time, four writes per claim, under its client's
// limit (18 claims a second at 100 requests a second), so a thousand created at once wait a
// minute or more. So the first status waits pendingRecheck, and
// as long as the binder is seen binding others (binderWorking), up to maxFirstStatusHold: then
// Pending tells the app team its claim is queued. A claim the binder does not seem to be
// working on is reported Pending after pendingRecheck, and anything else at once.
func firstStatusWait(sv *sharedvolumev1alpha1.SharedVolume, status sharedvolumev1alpha1.SharedVolumeStatus, claimMade time.Time, binderWorking bool) time.Duration {
	c := meta.FindStatusCondition(status.Conditions, ConditionReady)
	if sv.Status.Phase != "" || c == nil || c.Reason != ReasonBinding {
		return 0
	}
	waited := time.Since(claimMade)
	switch {
	case waited < pendingRecheck:
		return pendingRecheck - waited
	case binderWorking && waited < maxFirstStatusHold:
		// Looked at again as recheckAfter spaces the looks at a Pending one: each look at
		// thousands waiting is work the binder's API server shares.
		return min(max(pendingRecheck, waited/2), maxFirstStatusHold-waited)
	}
	return 0
}

// claimWaitingSince is when a SharedVolume's unbound claim started waiting for the binder: when
// its status first said so or, before any status, when the claim was made.
func claimWaitingSince(sv *sharedvolumev1alpha1.SharedVolume, pvc *corev1.PersistentVolumeClaim) time.Time {
	if c := bindingCondition(sv.Status); c != nil {
		return c.LastTransitionTime.Time
	}
	return pvc.CreationTimestamp.Time
}

// binderWorking says whether a claim of this controller's was found newly bound in the cache
// within pendingRecheck: the binder is working through its queue, and the cache's watch is
// current, so a claim unbound in the cache is unbound.
func (r *Reconciler) binderWorking() bool {
	return within(&r.lastBind, pendingRecheck)
}

// within says whether the time stored in last (Unix nanoseconds, 0 for never) is less than d ago.
func within(last *atomic.Int64, d time.Duration) bool {
	t := last.Load()
	return t != 0 && time.Since(time.Unix(0, t)) < d
}

// readClaim reads a claim from the cache, which holds every claim, while its watch is seen
// current (an event within claimsFresh), and else from the API server when the cache does not
// have it: a watch that broke brings no events until it is back, and meanwhile the cache can
// miss a claim made since.
func (r *Reconciler) readClaim(ctx context.Context, key client.ObjectKey, pvc *corev1.PersistentVolumeClaim) error {
	if r.claimsCurrent() {
		return r.Get(ctx, key, pvc)
	}
	return r.getAny(ctx, key, pvc)
}

// claimsCurrent says whether the claim informer delivered an event within claimsFresh.
func (r *Reconciler) claimsCurrent() bool {
	return within(&r.lastClaimEvent, claimsFresh)
}

// claimsFresh is how recent the claim informer's last event must be for its cache to be
// trusted with a claim's absence.
const claimsFresh = 2 * time.Second
