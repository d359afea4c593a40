package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// TestAdmit: SharedVolumes made since the controller started take turns, Workers at a time; a
// backlog, made before, is never held back by them.
func TestAdmit(t *testing.T) {
	started := time.Now().Truncate(time.Second)
	r := &Reconciler{slots: make(chan struct{}, 2)}
	r.started.Store(started.UnixNano())
	newSV, backlog := madeAt(started), madeAt(started.Add(-time.Second))

	var releases []func()
	for range 2 {
		release, err := r.admit(context.Background(), newSV)
		if err != nil {
			t.Fatalf("a new SharedVolume within Workers was not admitted: %v", err)
		}
		releases = append(releases, release)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := r.admit(ctx, newSV); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third new SharedVolume with two slots taken: got %v, want it held until its context ends", err)
	}
	for range 10 {
		release, err := r.admit(context.Background(), backlog)
		if err != nil {
			t.Fatalf("a backlog SharedVolume was held back: %v", err)
		}
		defer release()
	}
	releases[0]()
	if release, err := r.admit(context.Background(), newSV); err != nil {
		t.Fatalf("a new SharedVolume after a slot was released: %v", err)
	} else {
		release()
	}
	releases[1]()
}

// TestAdmitWhileArriving: while new SharedVolumes keep arriving, only the arriving slots take
// turns; once arrivals stop, one waiting takes a Workers slot.
func TestAdmitWhileArriving(t *testing.T) {
	started := time.Now().Truncate(time.Second)
	r := &Reconciler{slots: make(chan struct{}, 4), arrivingSlots: make(chan struct{}, 1)}
	r.started.Store(started.UnixNano())
	newSV := madeAt(started)

	// An app team creating SharedVolumes, one every few milliseconds.
	stop := make(chan struct{})
	arrivals := make(chan struct{})
	r.lastArrival.Store(time.Now().UnixNano())
	go func() {
		defer close(arrivals)
		for {
			select {
			case <-stop:
				return
			case <-time.After(arrivalGap / 10):
				r.lastArrival.Store(time.Now().UnixNano())
			}
		}
	}()
	first, err := r.admit(context.Background(), newSV)
	if err != nil {
		t.Fatalf("the first of an arriving burst was not admitted: %v", err)
	}
	defer first()
	ctx, cancel := context.WithTimeout(context.Background(), 3*arrivalGap)
	defer cancel()
	if _, err := r.admit(ctx, newSV); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second while arrivals go on, with the one arriving slot taken: got %v, want it held until its context ends", err)
	}
	if len(r.slots) != 0 {
		t.Fatalf("%d Workers slots taken while arrivals go on, want 0", len(r.slots))
	}

	close(stop)
	<-arrivals
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	release, err := r.admit(ctx, newSV)
	if err != nil {
		t.Fatalf("a SharedVolume after arrivals stopped, with Workers slots free: %v", err)
	}
	defer release()
	if len(r.slots) != 1 {
		t.Fatalf("%d Workers slots taken after arrivals stopped, want 1", len(r.slots))
	}
}

func madeAt(at time.Time) *sharedvolumev1alpha1.SharedVolume {
	return &sharedvolumev1alpha1.SharedVolume{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at)}}
}

// TestReadyWait: a bound SharedVolume's Ready status is held while another's claim was made
// within arrivalGap, for maxReadyHold at most, and never for the SharedVolume whose claim was
// the last made.
func TestReadyWait(t *testing.T) {
	self, other := types.NamespacedName{Namespace: "team", Name: "a"}, types.NamespacedName{Namespace: "team", Name: "b"}
	now := time.Now()
	for _, tc := range []struct {
		name     string
		lastPair *pairMade
		heldAt   time.Time // zero: not held before
		want     time.Duration
	}{
		{name: "no claim made", want: 0},
		{name: "its own claim the last made", lastPair: &pairMade{sharedVolume: self, at: now}, want: 0},
		{name: "another's claim made just now", lastPair: &pairMade{sharedVolume: other, at: now}, want: arrivalGap},
		{name: "another's claim made before arrivalGap", lastPair: &pairMade{sharedVolume: other, at: now.Add(-arrivalGap)}, want: 0},
		{name: "held for less than maxReadyHold", lastPair: &pairMade{sharedVolume: other, at: now}, heldAt: now.Add(-maxReadyHold / 2), want: arrivalGap},
		{name: "held for maxReadyHold", lastPair: &pairMade{sharedVolume: other, at: now}, heldAt: now.Add(-maxReadyHold), want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{}
			r.lastPair.Store(tc.lastPair)
			if !tc.heldAt.IsZero() {
				r.readyHeld.Store(self, tc.heldAt)
			}
			if got := r.readyWait(self); got != tc.want {
				t.Fatalf("readyWait = %v, want %v", got, tc.want)
			}
			if _, held := r.readyHeld.Load(self); tc.want > 0 && !held {
				t.Fatal("held, but not recorded as held: its hold would have no end")
			}
		})
	}
}
