package subscription

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/pkg/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestUpgradeThroughPortForward asks a catalog served in the "cluster" the way an admin's
// workstation must: the CatalogSource has no address, so the registry is reached by a
// port-forward to its registry pod through the API server (kwok plays the node and forwards to
// the real opm serve), and the catalog and OLM's answers come back over gRPC.
func TestUpgradeThroughPortForward(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.Full, testutil.WithTools(t, "olm-crds", "opm"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crds, err := testbed.ReadCRDDir(s.Tools().OLMCRDs)
	must(t, err)
	must(t, testbed.InstallCRDs(ctx, s.Client, crds...))
	addr, err := s.ServeCatalog(ctx, "certified", filepath.Join("..", "..", "catalog", "certified", "v4.11"))
	must(t, err)

	const ns, name = "openshift-marketplace", "certified-operators"
	must(t, s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	cs := &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       operatorsv1alpha1.CatalogSourceSpec{SourceType: operatorsv1alpha1.SourceTypeGrpc, Image: "registry.example/certified-index:v4.11"},
	}
	must(t, s.Client.Create(ctx, cs))
	if !olm.NeedsPortForward(cs) {
		t.Fatal("an image-based CatalogSource needs a port-forward")
	}
	// Without a registry pod there is nothing to forward to, and the error says what to do.
	if _, err := olm.DialRegistry(ctx, s.Client, s.Config, cs, ""); err == nil || !strings.Contains(err.Error(), "no running registry pod (label olm.catalogSource=certified-operators): pass --registry-address") {
		t.Errorf("DialRegistry without a pod: %v", err)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", Labels: map[string]string{olm.CatalogSourceLabel: name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "registry-server", Image: cs.Spec.Image, Ports: []corev1.ContainerPort{{Name: "grpc", ContainerPort: 50051}},
		}}},
	}
	must(t, s.Client.Create(ctx, pod))
	must(t, s.ForwardPodPort(ctx, ns, pod.Name, 50051, addr))
	var registry *olm.Registry
	must(t, testutil.Eventually(ctx, "the registry through a port-forward", func(ctx context.Context) error {
		r, err := olm.DialRegistry(ctx, s.Client, s.Config, cs, "")
		registry = r
		return err
	}))
	defer registry.Close()
	// OLM's resolver answers through the port-forward: the community 0.0.8 goes straight to the
	// minor's release by its skipRange.
	community := olmresolver.Operator{CSV: "aws-efs-operator.v0.0.8", Version: semver.MustParse("0.0.8"),
		Properties: []*api.Property{{Type: "olm.package", Value: `{"packageName":"aws-efs-operator","version":"0.0.8"}`}}}
	up, err := findUpgrade(ctx, registry, "stable", community)
	must(t, err)
	if up.Head != head || up.Edge != head || !slices.Equal(up.Path, []string{head}) || up.Why != "skipRange >=0.0.6 <4.11.0" {
		t.Errorf("upgrade through the port-forward = %+v", up)
	}
	if _, err := findUpgrade(ctx, registry, "fast", community); !noChannel(err) || !strings.Contains(err.Error(), `has no channel "fast"`) {
		t.Errorf("upgrade in a channel the package lacks: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
