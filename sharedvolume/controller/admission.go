package controller

import (
	"context"
	"time"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// admit waits, for a SharedVolume made since the controller started, until fewer than Workers
// such reconciles run, and returns what ends its turn. An app team's new SharedVolumes share the
// API server with the binder, which binds one claim at a time and which every one of them waits
// for: more requests in flight crowd it out. While new SharedVolumes keep arriving, the app
// team's own creates crowd it too, and only a quarter of the workers take turns; those waiting
// look again once arrivals stop. A backlog, made while no operator ran, found the binder idle,
// and its SharedVolumes have waited already: all the workers take it (DefaultOptions).
func (r *Reconciler) admit(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume) (release func(), err error) {
	if r.slots == nil || sv.CreationTimestamp.Time.Before(time.Unix(0, r.started.Load())) {
		return func() {}, nil
	}
	for {
		slots := r.slots
		var lookAgain <-chan time.Time
		if r.arriving() {
			slots, lookAgain = r.arrivingSlots, time.After(arrivalGap)
		}
		select {
		case slots <- struct{}{}:
			return func() { <-slots }, nil
		case <-lookAgain:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// arriving says whether a new SharedVolume arrived within arrivalGap.
func (r *Reconciler) arriving() bool {
	return within(&r.lastArrival, arrivalGap)
}

// arrivalGap is how long after the last new SharedVolume arrivals count as still coming: an app
// team creating hundreds at once makes one every few milliseconds.
const arrivalGap = 250 * time.Millisecond
