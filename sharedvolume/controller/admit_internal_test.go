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
	made := func(at time.Time) *v1alpha1.SharedVolume {
		return &v1alpha1.SharedVolume{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at)}}
	}
	newSV, backlog := made(started), made(started.Add(-time.Second))

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
