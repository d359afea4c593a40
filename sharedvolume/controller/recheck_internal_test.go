package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// TestRecheckAfter: a SharedVolume waiting for the binder is looked at less and less often, and
// one waiting for anything else every pendingRecheck, as its message says.
func TestRecheckAfter(t *testing.T) {
	pending := func(reason string, since time.Duration) v1alpha1.SharedVolumeStatus {
		return v1alpha1.SharedVolumeStatus{Phase: v1alpha1.SharedVolumePending, Conditions: []metav1.Condition{{
			Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, LastTransitionTime: metav1.NewTime(time.Now().Add(-since)),
		}}}
	}
	for _, tc := range []struct {
		name     string
		status   v1alpha1.SharedVolumeStatus
		min, max time.Duration
	}{
		{"no condition", v1alpha1.SharedVolumeStatus{Phase: v1alpha1.SharedVolumePending}, pendingRecheck, pendingRecheck},
		{"binding, just now", pending(ReasonBinding, 0), pendingRecheck, pendingRecheck},
		{"binding, for 15 s", pending(ReasonBinding, 15*time.Second), pendingRecheck, pendingRecheck},
		{"binding, for a minute", pending(ReasonBinding, time.Minute), 30 * time.Second, 31 * time.Second},
		{"binding, for an hour", pending(ReasonBinding, time.Hour), maxRecheck, maxRecheck},
		{"volume refused, for an hour", pending(ReasonVolumeRefused, time.Hour), pendingRecheck, pendingRecheck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recheckAfter(tc.status); got < tc.min || got > tc.max {
				t.Errorf("recheckAfter = %v, want %v to %v", got, tc.min, tc.max)
			}
		})
	}
}
