package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestRetriesAreCapped checks the backoff of a SharedVolume that keeps failing, as every one in
// flight does while the API server is down: it grows, but never past retryCap, so each is tried
// again soon after the server returns.
func TestRetriesAreCapped(t *testing.T) {
	l := retryLimiter()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "data"}}
	var delays []time.Duration
	for range 40 {
		delays = append(delays, l.When(req))
	}
	if delays[0] > 10*retryBase || delays[len(delays)-1] != retryCap {
		t.Errorf("the first retry waits %v, the 40th %v: want at most %v, then exactly %v", delays[0], delays[len(delays)-1], 10*retryBase, retryCap)
	}
	l.Forget(req)
	if d := l.When(req); d > 10*retryBase {
		t.Errorf("after a success the next failure waits %v", d)
	}
}
