package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// TestRecheckAfter: a SharedVolume waiting for the binder is looked at less and less often, and
// one waiting for anything else every pendingRecheck, as its message says.
func TestRecheckAfter(t *testing.T) {
	pending := func(reason string, since time.Duration) sharedvolumev1alpha1.SharedVolumeStatus {
		return sharedvolumev1alpha1.SharedVolumeStatus{Phase: sharedvolumev1alpha1.SharedVolumePending, Conditions: []metav1.Condition{{
			Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, LastTransitionTime: metav1.NewTime(time.Now().Add(-since)),
		}}}
	}
	for _, tc := range []struct {
		name     string
		status   sharedvolumev1alpha1.SharedVolumeStatus
		min, max time.Duration
	}{
		{"no condition", sharedvolumev1alpha1.SharedVolumeStatus{Phase: sharedvolumev1alpha1.SharedVolumePending}, pendingRecheck, pendingRecheck},
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

// TestFirstStatusWait: a new SharedVolume's first status is held back while its claim may bind
// soon, and no longer than maxFirstStatusHold while the binder works through others.
func TestFirstStatusWait(t *testing.T) {
	binding := sharedvolumev1alpha1.SharedVolumeStatus{Phase: sharedvolumev1alpha1.SharedVolumePending, Conditions: []metav1.Condition{{
		Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonBinding,
	}}}
	failedStatus := sharedvolumev1alpha1.SharedVolumeStatus{Phase: sharedvolumev1alpha1.SharedVolumeFailed, Conditions: []metav1.Condition{{
		Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonCollision,
	}}}
	fresh := &sharedvolumev1alpha1.SharedVolume{}
	reported := &sharedvolumev1alpha1.SharedVolume{Status: sharedvolumev1alpha1.SharedVolumeStatus{Phase: sharedvolumev1alpha1.SharedVolumePending}}
	ago := func(d time.Duration) time.Time { return time.Now().Add(-d) }
	for _, tc := range []struct {
		name     string
		sv       *sharedvolumev1alpha1.SharedVolume
		status   sharedvolumev1alpha1.SharedVolumeStatus
		made     time.Time
		working  bool
		min, max time.Duration
	}{
		{"claim just made", fresh, binding, ago(0), false, pendingRecheck - time.Second, pendingRecheck},
		{"claim made 4 s ago", fresh, binding, ago(4 * time.Second), false, 5 * time.Second, 6 * time.Second},
		{"binder idle, claim 15 s old", fresh, binding, ago(15 * time.Second), false, 0, 0},
		{"binder working, claim 15 s old", fresh, binding, ago(15 * time.Second), true, pendingRecheck, pendingRecheck},
		{"binder working, claim 60 s old", fresh, binding, ago(time.Minute), true, 30 * time.Second, 31 * time.Second},
		{"binder working, claim 110 s old", fresh, binding, ago(110 * time.Second), true, 9 * time.Second, 10 * time.Second},
		{"binder working, claim past the hold", fresh, binding, ago(3 * time.Minute), true, 0, 0},
		{"a status was written before", reported, binding, ago(0), true, 0, 0},
		{"a failure", fresh, failedStatus, ago(0), true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstStatusWait(tc.sv, tc.status, tc.made, tc.working); got < tc.min || got > tc.max {
				t.Errorf("firstStatusWait = %v, want %v to %v", got, tc.min, tc.max)
			}
		})
	}
}
