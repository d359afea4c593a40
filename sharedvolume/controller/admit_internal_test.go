package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
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

func madeAt(at time.Time) *v1alpha1.SharedVolume {
	return &v1alpha1.SharedVolume{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at)}}
}
