package operator

import (
	"context"
	"slices"
	"testing"

	"github.com/openshift/library-go/pkg/operator/events"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// TestNoFenceOnAClusterWithoutAdmissionPolicies: a cluster older than Kubernetes 1.30 serves no
// ValidatingAdmissionPolicy; the removal goes on without the fence, and the admin is told once.
// The real API server serves them, so this one case runs on a fake client's discovery.
func TestNoFenceOnAClusterWithoutAdmissionPolicies(t *testing.T) {
	kube := fake.NewClientset()
	kube.Resources = []*metav1.APIResourceList{{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "validatingwebhookconfigurations", Kind: "ValidatingWebhookConfiguration"},
	}}}
	f := newRemovalFence(kube, nil)
	recorder := events.NewInMemoryRecorder("test", clock.RealClock{})
	for range 2 {
		fenced, err := f.raise(context.Background(), recorder, map[string][]string{"app": {"data"}}, "removing")
		if fenced || err != nil {
			t.Fatalf("raise = %v, %v; want no fence and no error", fenced, err)
		}
	}
	var warnings []string
	for _, e := range recorder.Events() {
		warnings = append(warnings, e.Reason)
	}
	if !slices.Equal(warnings, []string{"RemovalFenceUnavailable"}) {
		t.Errorf("events %v, want one RemovalFenceUnavailable", warnings)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), efs.RemovalFence, metav1.GetOptions{}); err == nil {
		t.Error("a policy was created on a cluster that does not serve it")
	}
}
