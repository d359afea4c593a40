package operator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	f := newRemovalFence(kube, nil, nil, "operator")
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

// TestFenceShards: the fence spreads claims over shards each small enough for the API server to
// store (fenceShardMaxBytes, under its 1.5 MiB), holding every claim exactly once, and a claim
// bound during the fence changes one shard only.
func TestFenceShards(t *testing.T) {
	claims := func(namespaces, perNamespace, nameLength int) map[string][]string {
		c := map[string][]string{}
		for n := range namespaces {
			ns := fmt.Sprintf("team-%05d", n)
			for i := range perNamespace {
				name := fmt.Sprintf("data-%06d", i)
				c[ns] = append(c[ns], name+strings.Repeat("x", max(0, nameLength-len(name))))
			}
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		claims map[string][]string
		shards int
	}{
		{"no claims", nil, 0},
		{"a few", claims(2, 3, 0), 1},
		{"100,000 over 10,000 namespaces", claims(10_000, 10, 0), 16},
		{"20,000 of the longest names in one namespace", claims(1, 20_000, 253), 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shards := fenceShards(tc.claims)
			if len(shards) != tc.shards {
				t.Errorf("%d shards, want %d", len(shards), tc.shards)
			}
			seen := map[string]int{}
			for i, shard := range shards {
				size := 0
				for key := range shard {
					seen[key]++
					size += fenceClaimBytes(key)
				}
				if size > fenceShardMaxBytes {
					t.Errorf("shard %d holds %d bytes of claims, more than %d", i, size, fenceShardMaxBytes)
				}
			}
			want := 0
			for ns, names := range tc.claims {
				for _, name := range names {
					want++
					if seen[ns+"/"+name] != 1 {
						t.Errorf("claim %s/%s is in %d shards", ns, name, seen[ns+"/"+name])
					}
				}
			}
			if len(seen) != want {
				t.Errorf("the shards hold %d claims, want %d", len(seen), want)
			}
		})
	}

	before := claims(10_000, 10, 0)
	after := claims(10_000, 10, 0)
	after["late"] = []string{"data"}
	a, b := fenceShards(before), fenceShards(after)
	changed := 0
	for i := range a {
		if !maps.Equal(a[i], b[i]) {
			changed++
		}
	}
	if len(a) != len(b) || changed != 1 {
		t.Errorf("a claim bound during the fence changed %d of %d shards (now %d), want 1", changed, len(a), len(b))
	}
}
