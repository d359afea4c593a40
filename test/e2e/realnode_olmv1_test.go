package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator/releasefinalizer"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/crdcheck"
	"github.com/csi-olm/csi-olm/sharedvolume/releasesharedvolumes"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// olmv1Installer is the ServiceAccount an admin gives a ClusterExtension to install with.
const olmv1Installer = "aws-efs-operator-installer"

// olmv1Timings are how long OLM v1 took for each stage of an install, keyed as the benchmark
// reports them.
type olmv1Timings map[string]time.Duration

// startOLMv1 runs OLM v1 and what the operator needs of OpenShift, and serves the published
// catalogs named as ClusterCatalogs of equal priority. It records how long each took.
func startOLMv1(ctx context.Context, tb testing.TB, s *testbed.Stack, p *published, timings olmv1Timings, minor openshift.Minor, catalogs ...definition.Catalog) {
	tb.Helper()
	begin := time.Now()
	if err := s.StartOLMv1(ctx); err != nil {
		tb.Fatal(err)
	}
	timings["olmv1-up-s"] = time.Since(begin)
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true}); err != nil {
		tb.Fatal(err)
	}
	for _, name := range catalogs {
		begin = time.Now()
		if err := s.CreateClusterCatalog(ctx, string(name), p.catalogAt(tb, name, minor), 0); err != nil {
			tb.Fatal(err)
		}
		timings["clustercatalog-to-serving-s"] = time.Since(begin)
	}
}

// createOLMv1Installer creates the ServiceAccount OLM v1 installs the EFS operator with, in ns.
func createOLMv1Installer(ctx context.Context, tb testing.TB, s *testbed.Stack, ns string) {
	tb.Helper()
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: olmv1Installer}},
		// OLM v1 installs with the permissions of the ServiceAccount the admin names; the
		// docs/olm-v1.md shows this binding as the quick way and what a narrower one must grant.
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
}

// createOLMv1Extension creates the EFS operator's ClusterExtension, installing into ns with the
// installer, with the given spec.source.catalog fields beside its package name (a nil field is
// left out) and any other spec fields in extra.
func createOLMv1Extension(ctx context.Context, tb testing.TB, s *testbed.Stack, ns string, catalog, extra map[string]any) {
	tb.Helper()
	fields := map[string]any{"packageName": efsPackage}
	for k, v := range catalog {
		if v != nil {
			fields[k] = v
		}
	}
	spec := map[string]any{
		"namespace":      ns,
		"serviceAccount": map[string]any{"name": olmv1Installer},
		"source":         map[string]any{"sourceType": "Catalog", "catalog": fields},
	}
	for k, v := range extra {
		spec[k] = v
	}
	ce := efsExtension()
	ce.Object["spec"] = spec
	if err := s.Client.Create(ctx, ce); err != nil {
		tb.Fatal(err)
	}
}

// efsExtension is the EFS operator's ClusterExtension, by name.
func efsExtension() *unstructured.Unstructured {
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(testbed.ClusterExtensionGVK)
	ce.SetName(efsPackage)
	return ce
}

// selectCatalog is the ClusterExtension's selector of one ClusterCatalog, by the name label
// catalogd gives it.
func selectCatalog(name definition.Catalog) map[string]any {
	return map[string]any{"matchLabels": map[string]any{testbed.CatalogNameLabel: string(name)}}
}

// installWithOLMv1 installs the EFS operator at version from the certified catalog a release
// published for minor, as docs/olm-v1.md#installing-with-olm-v1 says: a ClusterCatalog for the catalog
// image, the namespace and installer ServiceAccount, a ClusterExtension selecting that catalog.
// It waits for the operator's pod to be Ready, running that version's published CSV, and returns
// the pod.
func installWithOLMv1(ctx context.Context, tb testing.TB, s *testbed.Stack, p *published, minor openshift.Minor, version string, timings olmv1Timings) *corev1.Pod {
	tb.Helper()
	startOLMv1(ctx, tb, s, p, timings, minor, definition.Certified)
	ns := operatorHubNamespace(ctx, tb, s, readCSV(tb, p.csvFile(efsPackage, version)))
	begin := time.Now()
	createOLMv1Installer(ctx, tb, s, ns)
	createOLMv1Extension(ctx, tb, s, ns, map[string]any{"version": version, "selector": selectCatalog(definition.Certified)}, nil)
	pod := waitForOLMv1Operator(ctx, tb, s, p, ns, version)
	timings["clusterextension-to-operator-ready-s"] = time.Since(begin)
	return pod
}

// waitForOLMv1Operator waits until the ClusterExtension reports version installed and the
// operator's pod runs that version's published CSV, Ready, and returns the pod.
func waitForOLMv1Operator(ctx context.Context, tb testing.TB, s *testbed.Stack, p *published, ns, version string) *corev1.Pod {
	tb.Helper()
	csvName := readCSV(tb, p.csvFile(efsPackage, version)).Name
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
			if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image && testbed.PodReady(p) {
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

// patchOLMv1Catalog merges fields into the EFS operator's ClusterExtension's
// spec.source.catalog, as an admin upgrades (version) or moves it (selector) with OLM v1.
func patchOLMv1Catalog(ctx context.Context, tb testing.TB, s *testbed.Stack, fields map[string]any) {
	tb.Helper()
	patchOLMv1Spec(ctx, tb, s, map[string]any{"source": map[string]any{"catalog": fields}})
}

// patchOLMv1Spec merges fields into the EFS operator's ClusterExtension's spec.
func patchOLMv1Spec(ctx context.Context, tb testing.TB, s *testbed.Stack, spec map[string]any) {
	tb.Helper()
	ce := efsExtension()
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Client.Patch(ctx, ce, client.RawPatch(types.MergePatchType, patch)); err != nil {
		tb.Fatal(err)
	}
}

// crdUpgradeSafety is the ClusterExtension spec that sets OLM v1's CRD upgrade-safety preflight.
func crdUpgradeSafety(enforcement string) map[string]any {
	return map[string]any{"install": map[string]any{"preflight": map[string]any{"crdUpgradeSafety": map[string]any{"enforcement": enforcement}}}}
}

// uninstallWithOLMv1 deletes the EFS operator's ClusterExtension while an app's pod uses a
// SharedVolume's claim. OLM v1 deletes everything it installed, the SharedVolume CRD included:
// the SharedVolume's PV and PVC, the driver and the ClusterCSIDriver must all stay, unchanged.
func uninstallWithOLMv1(ctx context.Context, t *testing.T, s *testbed.Stack, operator *corev1.Pod) {
	t.Helper()
	c, ns := s.Client, "team-b"
	sv := &sharedvolumev1alpha1.SharedVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept-data"},
		Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123abcd", AccessPointID: "fsap-0123456789abcdef1"},
	}
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, sv))
	if err := testutil.Eventually(ctx, "the SharedVolume Ready", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(sv), sv); err != nil {
			return err
		}
		if sv.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady {
			return fmt.Errorf("phase %s: %s", sv.Status.Phase, sv.Status.Message)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	must(t, c.Create(ctx, fixture.PodUsing(ns, "uses-kept-data", volumes.PVCName(sv))))
	kept := []client.Object{
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: volumes.PVName(sv)}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: volumes.PVCName(sv)}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: efs.ControllerDeployment}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: operator.Namespace, Name: efs.NodeDaemonSet}},
		&operatorv1.ClusterCSIDriver{ObjectMeta: metav1.ObjectMeta{Name: efs.CRName}},
	}
	uids := map[string]types.UID{}
	for _, o := range kept {
		must(t, c.Get(ctx, client.ObjectKeyFromObject(o), o))
		uids[fmt.Sprintf("%T %s", o, o.GetName())] = o.GetUID()
	}

	ce := efsExtension()
	must(t, c.Delete(ctx, ce))
	if err := testutil.Eventually(ctx, "the ClusterExtension and the operator's pod gone", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ce), ce); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterExtension still there (%v)", err)
		}
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(operator), &p); !apierrors.IsNotFound(err) {
			return fmt.Errorf("operator pod still there (%v)", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	assertKept := func(when string) {
		for _, o := range kept {
			key := fmt.Sprintf("%T %s", o, o.GetName())
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				t.Errorf("%s, %s: %v", when, key, err)
			} else if o.GetUID() != uids[key] || o.GetDeletionTimestamp() != nil {
				t.Errorf("%s, %s was replaced or is being deleted (deletion %v)", when, key, o.GetDeletionTimestamp())
			}
		}
	}
	// The operator either let the SharedVolume go itself, keeping its volumes, or was gone
	// first, and the SharedVolume's finalizer holds the CRD: the next step of docs/olm-v1.md.
	assertKept("after the ClusterExtension's deletion")
	var out bytes.Buffer
	if err := (&releasesharedvolumes.Release{ClusterOptions: kube.ClusterOptions{Config: s.Config}, Out: &out}).Run(ctx); err != nil {
		t.Fatalf("release-sharedvolumes after the uninstall: %v\n%s", err, out.String())
	}
	if err := (&releasefinalizer.Release{ClusterOptions: kube.ClusterOptions{Config: s.Config}, Out: &out}).Run(ctx); err != nil {
		t.Fatalf("release-finalizer after the uninstall: %v\n%s", err, out.String())
	}
	if err := testutil.Eventually(ctx, "the SharedVolume CRD gone", func(ctx context.Context) error {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: efs.SharedVolumeCRD}, &crd); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v), deleting since %v", err, crd.DeletionTimestamp)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	assertKept("after the SharedVolume CRD went")
}

// TestOLMv1CommunityMoveOnRealNode is the community user's move under OLM v1, on the real node.
// Both published catalogs are ClusterCatalogs of equal priority and both serve aws-efs-operator:
// a ClusterExtension that does not say which catalog gets OLM v1's ambiguity error, and no
// install. Selecting the community catalog installs the community operator (a stand-in of its
// image) beside the driver it deployed; selecting the certified catalog then moves it in one
// hop to the certified head, whose operator runs as its published CSV ships it and adopts the
// running driver in place for the ClusterCSIDriver.
func TestOLMv1CommunityMoveOnRealNode(t *testing.T) {
	stopRealNode()
	s := startRealNode(t)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	p := publish(t, s)
	startOLMv1(ctx, t, s, p, olmv1Timings{}, clusterMinor, definition.Community, definition.Certified)
	ns := testbed.OperatorsNamespace

	createOLMv1Installer(ctx, t, s, ns)
	createOLMv1Extension(ctx, t, s, ns, map[string]any{}, nil)
	ambiguity := fmt.Sprintf("in multiple catalogs with the same priority [%s %s]", definition.Certified, definition.Community)
	if _, err := testbed.WaitForOLMv1(ctx, s.Client, testbed.ClusterExtensionGVK, efsPackage, "the ambiguity error", func(u *unstructured.Unstructured) bool {
		return strings.Contains(testbed.ConditionMessage(u, "Progressing"), ambiguity)
	}); err != nil {
		t.Fatal(err)
	}

	begin := time.Now()
	patchOLMv1Catalog(ctx, t, s, map[string]any{"selector": selectCatalog(definition.Community)})
	communityVersion := strings.TrimPrefix(communityHeadCSV, "aws-efs-operator.v")
	waitForOLMv1Operator(ctx, t, s, p, ns, communityVersion)
	t.Logf("community catalog selected -> community operator Ready: %s", time.Since(begin).Round(100*time.Millisecond))
	objects, err := fixture.CommunityDriver(ctx, s.Client, ns)
	if err != nil {
		t.Fatal(err)
	}
	ds := objects[len(objects)-1].(*appsv1.DaemonSet)

	sv := &sharedvolumev1alpha1.SharedVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "community-data"},
		Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123abcd", AccessPointID: "fsap-0123456789abcdef2"},
	}
	must(t, s.Client.Create(ctx, sv))

	// The certified CRD validates more than the community one (spec required, bounded IDs, an
	// enum of phases, an immutable spec): OLM v1's CRD upgrade-safety preflight refuses the
	// move, which OLM v0 never checked, and the community operator stays installed.
	patchOLMv1Catalog(ctx, t, s, map[string]any{"selector": selectCatalog(definition.Certified)})
	refusal := fmt.Sprintf("validating upgrade for CRD %q", efs.SharedVolumeCRD)
	if _, err := testbed.WaitForOLMv1(ctx, s.Client, testbed.ClusterExtensionGVK, efsPackage, "the CRD upgrade-safety refusal", func(u *unstructured.Unstructured) bool {
		name, _, _ := unstructured.NestedString(u.Object, "status", "install", "bundle", "name")
		return strings.Contains(testbed.ConditionMessage(u, "Progressing"), refusal) && name == communityHeadCSV
	}); err != nil {
		t.Fatal(err)
	}
	// The admin checks that every existing SharedVolume is valid under the certified CRD, as
	// docs/olm-v1.md#installing-with-olm-v1 says, and lets this one upgrade past the preflight.
	var report bytes.Buffer
	if err := (&crdcheck.Check{ClusterOptions: kube.ClusterOptions{Config: s.Config}, Out: &report}).Run(ctx); err != nil {
		t.Fatalf("check-sharedvolumes: %v\n%s", err, report.String())
	}
	if !strings.Contains(report.String(), "every SharedVolume (1) is valid under the certified CRD") {
		t.Errorf("check-sharedvolumes reports:\n%s", report.String())
	}
	begin = time.Now()
	patchOLMv1Spec(ctx, t, s, crdUpgradeSafety("None"))
	pod := waitForOLMv1Operator(ctx, t, s, p, ns, strings.TrimPrefix(certifiedHeadCSV, "aws-efs-csi-driver-operator.v"))
	t.Logf("preflight set aside -> supported operator pod Ready: %s", time.Since(begin).Round(100*time.Millisecond))
	patchOLMv1Spec(ctx, t, s, crdUpgradeSafety("Strict"))
	shipped := p.operator(t)
	assertRunsAsShipped(t, pod, shipped)
	adoptOnClusterCSIDriver(ctx, t, s, ds, shipped, pod)
	// The community user's SharedVolume is the certified operator's now.
	if err := testutil.Eventually(ctx, "the community SharedVolume Ready under the certified operator", func(ctx context.Context) error {
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(sv), sv); err != nil {
			return err
		}
		if sv.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady {
			return fmt.Errorf("phase %s: %s", sv.Status.Phase, sv.Status.Message)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
