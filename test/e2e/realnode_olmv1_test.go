package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// olmv1Installer is the ServiceAccount an admin gives a ClusterExtension to install with.
const olmv1Installer = "aws-efs-operator-installer"

// olmv1Timings are how long OLM v1 took for each stage of an install, keyed as the benchmark
// reports them.
type olmv1Timings map[string]time.Duration

// installWithOLMv1 installs the EFS operator at version from the published certified catalog as
// README.md#installing-with-olm-v1 says: a ClusterCatalog for the catalog image, the namespace and
// installer ServiceAccount, a ClusterExtension selecting that catalog. It waits for the
// operator's pod to be Ready, running that version's published CSV, and returns the pod.
func installWithOLMv1(ctx context.Context, tb testing.TB, s *testbed.Stack, p *published, version string, timings olmv1Timings) *corev1.Pod {
	tb.Helper()
	begin := time.Now()
	if err := s.StartOLMv1(ctx); err != nil {
		tb.Fatal(err)
	}
	timings["olmv1-up-s"] = time.Since(begin)
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true}); err != nil {
		tb.Fatal(err)
	}
	begin = time.Now()
	if err := s.CreateClusterCatalog(ctx, string(definition.Certified), p.catalogs[definition.Certified], 0); err != nil {
		tb.Fatal(err)
	}
	timings["clustercatalog-to-serving-s"] = time.Since(begin)

	ns := operatorHubNamespace(ctx, tb, s, readCSV(tb, p.csvFile(efsPackage, version)))
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: olmv1Installer}},
		// OLM v1 installs with the permissions of the ServiceAccount the admin names; the
		// README shows this binding as the quick way and what a narrower one must grant.
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: olmv1Installer},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: olmv1Installer}},
		},
	} {
		if err := s.Client.Create(ctx, obj); err != nil {
			tb.Fatal(err)
		}
	}
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(testbed.ClusterExtensionGVK)
	ce.SetName(efsPackage)
	ce.Object["spec"] = map[string]any{
		"namespace":      ns,
		"serviceAccount": map[string]any{"name": olmv1Installer},
		"source": map[string]any{
			"sourceType": "Catalog",
			"catalog": map[string]any{
				"packageName": efsPackage,
				"version":     version,
				"selector":    map[string]any{"matchLabels": map[string]any{testbed.CatalogNameLabel: string(definition.Certified)}},
			},
		},
	}
	begin = time.Now()
	if err := s.Client.Create(ctx, ce); err != nil {
		tb.Fatal(err)
	}
	pod := waitForOLMv1Operator(ctx, tb, s, p, ns, version)
	timings["clusterextension-to-operator-ready-s"] = time.Since(begin)
	return pod
}

// waitForOLMv1Operator waits until the ClusterExtension reports version installed and the
// operator's pod runs that version's published CSV, Ready, and returns the pod.
func waitForOLMv1Operator(ctx context.Context, tb testing.TB, s *testbed.Stack, p *published, ns, version string) *corev1.Pod {
	tb.Helper()
	csvName := "aws-efs-csi-driver-operator.v" + version
	if _, err := testbed.WaitForOLMv1(ctx, s.Client, testbed.ClusterExtensionGVK, efsPackage, "Installed "+csvName, func(u *unstructured.Unstructured) bool {
		name, _, _ := unstructured.NestedString(u.Object, "status", "install", "bundle", "name")
		return testbed.ConditionStatus(u, "Installed") == "True" && name == csvName
	}); err != nil {
		tb.Fatal(err)
	}
	shipped := csvDeployment(tb, p.csvFile(efsPackage, version))
	image := shipped.Spec.Template.Spec.Containers[0].Image
	var pod *corev1.Pod
	if err := testutil.Eventually(ctx, "the operator pod of "+csvName+" Ready", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := s.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(shipped.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		var running []string
		for i := range pods.Items {
			p := &pods.Items[i]
			running = append(running, p.Name+" "+p.Spec.Containers[0].Image)
			if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image && podReady(p) {
				pod = p
				return nil
			}
		}
		return fmt.Errorf("no Ready pod runs %s: %v", image, running)
	}); err != nil {
		tb.Fatal(err)
	}
	return pod
}

// TestOLMv1OnRealNode installs the EFS operator with OLM v1 (catalogd and operator-controller
// as pods on the node) from the certified catalog image a release published: a ClusterCatalog
// serves it, a ClusterExtension installs 4.10.0, whose operator runs as its CSV ships it with no
// request refused and deploys the driver for a ClusterCSIDriver; then the ClusterExtension's
// version moves to 4.11.0 and OLM v1 upgrades the operator in one hop.
func TestOLMv1OnRealNode(t *testing.T) {
	stopRealNode() // a new cluster: OLM v0's Subscriptions of other flows would own the namespace
	s := startRealNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := publish(t, s)
	timings := olmv1Timings{}
	pod := installWithOLMv1(ctx, t, s, p, "4.10.0", timings)
	assertRunsAsShipped(t, pod, csvDeployment(t, p.csvFile(efsPackage, "4.10.0")))
	d := deployDriver(ctx, t, s, pod)
	t.Logf("ClusterCSIDriver -> driver pods Running and Ready: %s", d.running.Round(100*time.Millisecond))

	begin := time.Now()
	bumpOLMv1Version(ctx, t, s, "4.11.0")
	upgraded := waitForOLMv1Operator(ctx, t, s, p, pod.Namespace, "4.11.0")
	timings["version-bump-to-operator-ready-s"] = time.Since(begin)
	assertRunsAsShipped(t, upgraded, p.operator(t))
	for name, d := range timings {
		t.Logf("%s: %s", name, d.Round(100*time.Millisecond))
	}
	time.Sleep(20 * time.Second)
	logs := podLog(ctx, kubeClient(s), upgraded)
	if line := firstLineWith(logs, "forbidden"); line != "" {
		t.Errorf("the operator installed by OLM v1 was refused by the API server: %s", line)
	}
}

// bumpOLMv1Version sets the version the EFS operator's ClusterExtension asks for, as an admin
// upgrades with OLM v1.
func bumpOLMv1Version(ctx context.Context, tb testing.TB, s *testbed.Stack, version string) {
	tb.Helper()
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(testbed.ClusterExtensionGVK)
	ce.SetName(efsPackage)
	patch := []byte(fmt.Sprintf(`{"spec":{"source":{"catalog":{"version":%q}}}}`, version))
	if err := s.Client.Patch(ctx, ce, client.RawPatch(types.MergePatchType, patch)); err != nil {
		tb.Fatal(err)
	}
}
