package testbed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestRestartKeepsTheData restarts etcd and the API server and expects the cluster to serve
// what it stored before, on the same address with the same credentials; a paused API server
// answers nothing until it is resumed.
func TestRestartKeepsTheData(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stored := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before"}}
	if err := s.Client.Create(ctx, stored); err != nil {
		t.Fatal(err)
	}
	for _, component := range []string{testbed.EtcdComponent, testbed.APIServerComponent} {
		begin := time.Now()
		if err := s.Restart(ctx, component); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s restarted in %v", component, time.Since(begin).Round(10*time.Millisecond))
		err := testutil.Eventually(ctx, "the ConfigMap read back", func(ctx context.Context) error {
			return s.Client.Get(ctx, client.ObjectKeyFromObject(stored), &corev1.ConfigMap{})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Restart(ctx, "kube-nothing"); err == nil {
		t.Error("restarting a component the stack does not run succeeded")
	}

	resume, err := s.Pause(testbed.APIServerComponent)
	if err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	err = s.Client.Get(short, client.ObjectKeyFromObject(stored), &corev1.ConfigMap{})
	stop()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a paused API server answered: %v", err)
	}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(stored), &corev1.ConfigMap{}); err != nil {
		t.Errorf("after resuming: %v", err)
	}
}
