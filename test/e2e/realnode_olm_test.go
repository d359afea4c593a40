package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator"
	"github.com/csi-olm/csi-olm/operator/assets"
	"github.com/csi-olm/csi-olm/operator/releasefinalizer"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/releasesharedvolumes"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
	"github.com/csi-olm/csi-olm/test/csistandin"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// readCSV reads a committed CSV.
func readCSV(t testing.TB, file string) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		t.Fatal(err)
	}
	return &csv
}

// csvDeployment is the only operator Deployment of a committed CSV, with its only container.
func csvDeployment(t testing.TB, file string) operatorsv1alpha1.StrategyDeploymentSpec {
	t.Helper()
	specs := readCSV(t, file).Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(specs) != 1 || len(specs[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%s has %d deployments; the tests follow the only container of the only one", file, len(specs))
	}
	return specs[0]
}

// committedCSVFile is the committed CSV of an EFS release.
func committedCSVFile(version string) string {
	return filepath.Join("..", "..", "bundle", efsPackage, version, "manifests", "aws-efs-csi-driver-operator.v"+version+".clusterserviceversion.yaml")
}

// pushOperatorAndCatalog builds the tree's operator image and certified catalog image and
// pushes them: the operator under the very reference the shipped CSV names, the catalog under
// the stack's registry. It returns the catalog image's reference.
func pushOperatorAndCatalog(t testing.TB, s *testbed.Stack, operatorRef string, minor openshift.Minor) string {
	t.Helper()
	ctx := context.Background()
	binary, err := os.ReadFile(testutil.BuildStatic(t, "github.com/csi-olm/csi-olm/cmd/aws-efs-csi-driver-operator", "amd64"))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := images.OperatorIndex([][]byte{binary}, nil, "e2e", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RegistryClient().Push(ctx, operatorRef, idx); err != nil {
		t.Fatal(err)
	}
	catalogRef, err := s.PushCatalogImage(ctx, "certified-catalog", tree.Path(filepath.Join("..", "..", "catalog", "certified"), minor))
	if err != nil {
		t.Fatal(err)
	}
	return catalogRef
}

// TestAdminQuickStartOnRealNode runs README.md's admin quick start as written, block by block:
// the install an admin makes from OperatorHub, with nothing simulated. OLM runs the catalog
// image of the cluster's minor, as a release published it, as a registry pod, unpacks the bundle
// image it names by digest with a bundle-unpack Job, resolves the Subscription, and runs the
// operator's pod from its image with the CSV's args, env, ServiceAccount, RBAC and in-cluster
// configuration, in the namespace and with the monitoring label OperatorHub's page gives the
// shipped CSV. The operator must become Ready, stay up for a minute without a restart or a
// refusal, and deploy the driver onto the node for the README's ClusterCSIDriver, whose pods run
// with every container Ready; the cluster's Prometheus sees the not-enabled alert go. Then the
// README's StorageClass and an app team's SharedVolume, a second app team's SharedVolume that a
// pod mounts through the kubelet and that holds back the driver's removal, and the README's
// uninstall. The community source switch runs in TestSourceSwitchOnRealNode, which has a
// community install to switch, and the move to OLM v1 in TestOLMv0ToOLMv1OnRealNode, which runs
// OLM v1.
func TestAdminQuickStartOnRealNode(t *testing.T) {
	blocks := quickStartBlocks(t, adminQuickStart)
	flow := []string{installSection, driverSection, classSection, sharedSection, uninstallSection}
	for section := range blocks {
		if !slices.Contains(flow, section) && section != switchSection && section != olmv1Section {
			t.Errorf("README.md's admin quick start section %q has blocks that no test runs", section)
		}
	}
	s := startRealNode(t)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	c := s.Client
	// The CSV lists ClusterCSIDriver as a native API: OLM checks the cluster serves it. The
	// driver's controller pod mounts what the service CA and cloud-credential operators write.
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true, Version: clusterRelease(clusterMinor)}); err != nil {
		t.Fatal(err)
	}
	p := publish(t, s)
	minor, err := kube.ClusterMinor(ctx, s.Config)
	if err != nil {
		t.Fatal(err)
	}
	file := p.csvFile(efsPackage, efsReleaseFor(t, minor).Version)
	shipped := csvDeployment(t, file)
	admin := newAdminShell(t, s)

	begin := time.Now()
	admin.runSection(ctx, t, blocks, installSection)
	pod := operatorPod(ctx, t, c, quickStartNS, shipped)
	t.Logf("the README's install -> operator pod Ready: %s", time.Since(begin).Round(100*time.Millisecond))
	assertRunsAsShipped(t, pod, shipped)
	readmeInstallsAsOperatorHub(ctx, t, c, readCSV(t, file))
	// OLM created the bundle's NetworkPolicy beside the operator, and it selects the running pod.
	var policy networkingv1.NetworkPolicy
	if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: efs.OperatorName}, &policy); err != nil {
		t.Errorf("the bundle's NetworkPolicy: %v", err)
	} else if selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector); err != nil || !selector.Matches(labels.Set(pod.Labels)) {
		t.Errorf("the bundle's NetworkPolicy selects %v, not the operator's pod %v (%v)", policy.Spec.PodSelector, pod.Labels, err)
	}

	readySince := time.Now()
	// The cluster's Prometheus scrapes the operator through what its bundle ships; without the
	// ClusterCSIDriver, AWSEFSDriverNotEnabled's expression gives the one series that fires.
	actAsClusterPrometheus(ctx, t, s)
	if n := notEnabledSeries(ctx, t, s, pod.Namespace, scrapeOperator(ctx, t, s, pod.Namespace)); n != 1 {
		t.Errorf("without the ClusterCSIDriver, %s's expression gives %d series, want 1", notEnabledAlert, n)
	}
	operatorStaysUp(ctx, t, s, pod, readySince, 0)
	d := deployDriver(ctx, t, s, pod, func() { admin.runSection(ctx, t, blocks, driverSection) })
	t.Logf("the README's ClusterCSIDriver -> every operand applied: %s, driver pods placed on the node: %s, Running and Ready: %s",
		d.applied.Round(10*time.Millisecond), d.placed.Round(100*time.Millisecond), d.running.Round(100*time.Millisecond))
	if n := notEnabledSeries(ctx, t, s, pod.Namespace, scrapeOperator(ctx, t, s, pod.Namespace)); n != 0 {
		t.Errorf("with the ClusterCSIDriver, %s's expression gives %d series, want 0", notEnabledAlert, n)
	}
	volumeMetricsReachTheNodePlugin(ctx, t, s, pod.Namespace)

	admin.runSection(ctx, t, blocks, classSection)
	var class storagev1.StorageClass
	if err := c.Get(ctx, client.ObjectKey{Name: "efs-sc"}, &class); err != nil || class.Provisioner != efs.DriverName {
		t.Errorf("the README's StorageClass provisions with %q (%v), want %s", class.Provisioner, err, efs.DriverName)
	}

	admin.runSection(ctx, t, blocks, sharedSection)
	var sv sharedvolumev1alpha1.SharedVolume
	must(t, c.Get(ctx, client.ObjectKey{Namespace: quickStartAppNS, Name: quickStartVolume}, &sv))
	var claim corev1.PersistentVolumeClaim
	must(t, c.Get(ctx, client.ObjectKey{Namespace: quickStartAppNS, Name: "pvc-" + quickStartVolume}, &claim))
	if claim.Status.Phase != corev1.ClaimBound {
		t.Errorf("the SharedVolume's claim is %s, want Bound", claim.Status.Phase)
	}
	ready := appTeamMountsASharedVolume(ctx, t, s)
	t.Logf("SharedVolume created -> Ready: %s", ready.Round(100*time.Millisecond))
	removalWaitsForTheApp(ctx, t, s, pod, p.cliImage(t))
	operatorStaysUp(ctx, t, s, pod, readySince, time.Minute)

	admin.runSection(ctx, t, blocks, uninstallSection)
	for _, gone := range []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&operatorv1.ClusterCSIDriver{}, client.ObjectKey{Name: efs.CRName}},
		{&appsv1.DaemonSet{}, client.ObjectKey{Namespace: quickStartNS, Name: efs.NodeDaemonSet}},
		{&operatorsv1alpha1.Subscription{}, client.ObjectKey{Namespace: quickStartNS, Name: efsPackage}},
		{&corev1.Pod{}, client.ObjectKeyFromObject(pod)},
	} {
		must(t, testutil.Eventually(ctx, fmt.Sprintf("%T %s gone after the README's uninstall", gone.obj, gone.key), func(ctx context.Context) error {
			if err := c.Get(ctx, gone.key, gone.obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		}))
	}
	// The volumes stay, and no SharedVolume waits any more for an operator that is gone.
	must(t, c.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, &corev1.PersistentVolume{}))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(&claim), &claim))
	var svs sharedvolumev1alpha1.SharedVolumeList
	must(t, c.List(ctx, &svs))
	if len(svs.Items) != 2 {
		t.Errorf("after the README's uninstall %d SharedVolumes, want the 2 the app teams made", len(svs.Items))
	}
	for _, sv := range svs.Items {
		if len(sv.Finalizers) != 0 {
			t.Errorf("after the README's uninstall SharedVolume %s/%s keeps finalizers %v", sv.Namespace, sv.Name, sv.Finalizers)
		}
	}
}

// readmeInstallsAsOperatorHub fails the test unless the README's install put the operator where
// OperatorHub's install page puts the shipped CSV: its suggested namespace, labelled for cluster
// monitoring when the CSV asks for it (the page's checkbox is on by default then; the cluster's
// Prometheus reads ServiceMonitors only from such namespaces).
func readmeInstallsAsOperatorHub(ctx context.Context, t *testing.T, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion) {
	t.Helper()
	if want := csv.Annotations["operatorframework.io/suggested-namespace"]; want != quickStartNS {
		t.Errorf("the README installs into %s, CSV %s suggests %q", quickStartNS, csv.Name, want)
	}
	var namespace corev1.Namespace
	must(t, c.Get(ctx, client.ObjectKey{Name: quickStartNS}, &namespace))
	if want, got := csv.Annotations[clusterMonitoringAnnotation] == "true", namespace.Labels[clusterMonitoringLabel] == "true"; want != got {
		t.Errorf("the README's namespace %s has %s=true: %v; CSV %s asks for cluster monitoring: %v", quickStartNS, clusterMonitoringLabel, got, csv.Name, want)
	}
}

// operatorStaysUp fails the test unless the operator's pod, Ready since readySince, has run for
// at least minimum (waiting out the rest) without a restart, is Ready, and was never refused by
// the API server. Both defects that once shipped ended the process within seconds of its start,
// and a third (no /tmp in the image) at its first restart; what fails later fails within the
// first resyncs. The flow's own steps fill the minute: it is checked at their end, not slept
// before them.
func operatorStaysUp(ctx context.Context, t *testing.T, s *testbed.Stack, pod *corev1.Pod, readySince time.Time, minimum time.Duration) {
	t.Helper()
	time.Sleep(time.Until(readySince.Add(minimum)))
	var after corev1.Pod
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(pod), &after); err != nil {
		t.Fatal(err)
	}
	logs := podLog(ctx, kubeClient(s), pod)
	if restarts := restartCount(&after); after.UID != pod.UID || restarts != 0 || !testbed.PodReady(&after) {
		t.Fatalf("%s after Ready, the operator pod (UID %s, was %s) has %d restarts, Ready=%v; log:\n%s",
			time.Since(readySince).Round(time.Second), after.UID, pod.UID, restarts, testbed.PodReady(&after), tailLines(logs, 30))
	}
	if line := firstLineWith(logs, "forbidden"); line != "" {
		t.Errorf("the operator was refused by the API server: %s", line)
	}
}

// volumeMetricsReachTheNodePlugin turns volume metrics on in the ClusterCSIDriver, as an admin
// does, and waits for the node plugin on the node to run with them.
func volumeMetricsReachTheNodePlugin(ctx context.Context, t *testing.T, s *testbed.Stack, driverNS string) {
	t.Helper()
	c := s.Client
	patch := `{"spec":{"driverConfig":{"driverType":"AWS","aws":{"efsVolumeMetrics":{"state":"RecursiveWalk","recursiveWalk":{"refreshPeriodMinutes":30,"fsRateLimit":7}}}}}}`
	if err := c.Patch(ctx, &operatorv1.ClusterCSIDriver{ObjectMeta: metav1.ObjectMeta{Name: efs.CRName}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	want := csistandin.VolumeMetricsLog + "opt-in=true refresh-period=30 fs-rate-limit=7"
	if err := testutil.Eventually(ctx, "the node plugin running with volume metrics", func(ctx context.Context) error {
		pods, err := driverPods(ctx, c, driverNS)
		if err != nil {
			return err
		}
		var seen []string
		for i := range pods {
			p := &pods[i]
			if !strings.HasPrefix(p.Name, efs.NodeDaemonSet+"-") || p.DeletionTimestamp != nil || !testbed.PodReady(p) {
				continue
			}
			line := firstLineWith(containerLog(ctx, s, p, "efs-plugin", 0), csistandin.VolumeMetricsLog)
			if strings.Contains(line, want) {
				return nil
			}
			seen = append(seen, p.Name+": "+line)
		}
		return fmt.Errorf("node plugins Ready: %v", seen)
	}); err != nil {
		t.Fatal(err)
	}
	waitDriverRunning(ctx, t, s, driverNS)
}

// removalWaitsForTheApp sets the ClusterCSIDriver Removed while the app team's pod uses its
// SharedVolume on the node: the driver stays and the condition names the pod. Once the pod is
// gone, the driver is removed and the SharedVolume's volume stays; Managed brings the driver back.

// pollUntil polls done every 50 ms and returns when it first held.
func pollUntil(ctx context.Context, t *testing.T, what string, done func() bool) time.Time {
	t.Helper()
	for {
		if done() {
			return time.Now()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func removalWaitsForTheApp(ctx context.Context, t *testing.T, s *testbed.Stack, operatorPod *corev1.Pod, shellImage string) {
	t.Helper()
	c, driverNS := s.Client, operatorPod.Namespace
	setState := func(state operatorv1.ManagementState) {
		t.Helper()
		cr := &operatorv1.ClusterCSIDriver{ObjectMeta: metav1.ObjectMeta{Name: efs.CRName}}
		patch := []byte(fmt.Sprintf(`{"spec":{"managementState":%q}}`, state))
		if err := c.Patch(ctx, cr, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
	condition := func(conditionType string, status operatorv1.ConditionStatus, reason, says string) func(context.Context) error {
		return func(ctx context.Context) error {
			var cr operatorv1.ClusterCSIDriver
			if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &cr); err != nil {
				return err
			}
			for _, cond := range cr.Status.Conditions {
				if cond.Type == conditionType && cond.Status == status && cond.Reason == reason && strings.Contains(cond.Message, says) {
					return nil
				}
			}
			return fmt.Errorf("conditions %+v", cr.Status.Conditions)
		}
	}
	fail := func(err error) {
		t.Helper()
		t.Fatalf("%v\noperator log:\n%s", err, tailLines(podLog(ctx, kubeClient(s), operatorPod), 30))
	}
	node := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: driverNS, Name: efs.NodeDaemonSet}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	setState(operatorv1.Removed)
	if err := testutil.Eventually(ctx, "the removal held back by the app's pod", condition("AWSEFSDriverUninstallDegraded", operatorv1.ConditionTrue, "VolumesInUse",
		"pod team-a/uses-shared-data uses claim")); err != nil {
		fail(err)
	}
	var kept appsv1.DaemonSet
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), &kept); err != nil || kept.UID != node.UID || kept.DeletionTimestamp != nil {
		t.Fatalf("the node DaemonSet was touched while a pod used its volume: %v", err)
	}

	var sv sharedvolumev1alpha1.SharedVolume
	if err := c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "shared-data"}, &sv); err != nil {
		t.Fatal(err)
	}
	app := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "uses-shared-data"}}
	if err := c.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	// The operator watches the pods while the removal waits, so the pod's deletion itself brings
	// the removal's next look: from the app's pod gone (its volume unmounted, its object deleted)
	// the fence is raised (the phase FencingVolumes or SettlingFence) sooner than the lifecycle's
	// own periodic look (operator.LifecycleResync) could have brought it, and the node DaemonSet
	// is deleted the fence's settle time after that. How soon is the machine's speed: 50 ms on an
	// idle one, 4.3 s at half speed. Polled every 50 ms.
	podGone := pollUntil(ctx, t, "the app's pod gone", func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(app), &corev1.Pod{}))
	})
	var fenced time.Time
	driverDeleted := pollUntil(ctx, t, "the node DaemonSet deleted", func() bool {
		var cr operatorv1.ClusterCSIDriver
		if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &cr); err == nil && fenced.IsZero() {
			if cond := v1helpers.FindOperatorCondition(cr.Status.Conditions, "AWSEFSDriverUninstallProgressing"); cond != nil &&
				(cond.Reason == "FencingVolumes" || cond.Reason == "SettlingFence") {
				fenced = time.Now()
			}
		}
		var ds appsv1.DaemonSet
		err := c.Get(ctx, client.ObjectKeyFromObject(node), &ds)
		return apierrors.IsNotFound(err) || (err == nil && ds.DeletionTimestamp != nil)
	})
	if fenced.IsZero() {
		t.Fatal("the removal was never seen raising its fence")
	}
	took, settle := driverDeleted.Sub(podGone), driverDeleted.Sub(fenced)
	t.Logf("app's pod gone -> node DaemonSet deleted: %s = pod gone -> fence raised %s + the fence's settle time %s",
		took.Round(10*time.Millisecond), fenced.Sub(podGone).Round(10*time.Millisecond), settle.Round(10*time.Millisecond))
	if reacted := fenced.Sub(podGone); reacted >= operator.LifecycleResync {
		t.Errorf("the removal raised its fence %s after the app's pod was gone, no sooner than its periodic look (every %s) would have: the pod watch did not bring it", reacted, operator.LifecycleResync)
	}
	if err := testutil.Eventually(ctx, "the driver removed once no pod uses its volume", condition("AWSEFSDriverUninstallProgressing", operatorv1.ConditionFalse, "DriverRemoved", "")); err != nil {
		fail(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), &kept); !apierrors.IsNotFound(err) {
		t.Errorf("the node DaemonSet after the removal: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: volumes.PVName(&sv)}, &corev1.PersistentVolume{}); err != nil {
		t.Errorf("the SharedVolume's PersistentVolume after the driver's removal: %v", err)
	}
	// The driver is gone: OpenShift's own operator's node plugin, found running when the CR is
	// Managed again, is refused, and removed as the refusal says.
	openShiftsPluginRefused(ctx, t, s, operatorPod, shellImage, setState)
	waitDriverRunning(ctx, t, s, driverNS)
}

// uninstallOnlyTheOperator removes the operator as an admin does, deleting its Subscription and
// its installed CSV, and checks that the driver it deployed stays exactly as it was (the same
// objects and pods), and that the release verbs, which stand in for the gone operator, then work.
func uninstallOnlyTheOperator(ctx context.Context, t *testing.T, s *testbed.Stack, operator *corev1.Pod, installedCSV string) {
	t.Helper()
	c, ns := s.Client, operator.Namespace
	podUIDs := func() map[string]types.UID {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		uids := map[string]types.UID{}
		for _, p := range pods.Items {
			if p.Name != operator.Name && p.DeletionTimestamp == nil {
				uids[p.Name] = p.UID
			}
		}
		return uids
	}
	driver := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}},
	}
	uids := map[string]types.UID{}
	for _, o := range driver {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		uids[o.GetName()] = o.GetUID()
	}
	podsBefore := podUIDs()

	for _, o := range []client.Object{
		&operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efsPackage}},
		&operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: installedCSV}},
	} {
		if err := c.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := testutil.Eventually(ctx, "the operator's pod gone", func(ctx context.Context) error {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(operator), &p); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, o := range driver {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil || o.GetUID() != uids[o.GetName()] || o.GetDeletionTimestamp() != nil {
			t.Errorf("uninstalling the operator touched its driver's %s: %v", o.GetName(), err)
		}
	}
	if after := podUIDs(); !maps.Equal(after, podsBefore) {
		t.Errorf("uninstalling the operator changed the driver's pods: %v, were %v", after, podsBefore)
	}

	var out bytes.Buffer
	if err := (&releasefinalizer.Release{ClusterOptions: kube.ClusterOptions{Config: s.Config}, Out: &out}).Run(ctx); err != nil {
		t.Fatalf("release-finalizer after the uninstall: %v\n%s", err, out.String())
	}
	if err := (&releasesharedvolumes.Release{ClusterOptions: kube.ClusterOptions{Config: s.Config}, Out: &out}).Run(ctx); err != nil {
		t.Fatalf("release-sharedvolumes after the uninstall: %v\n%s", err, out.String())
	}
	var cr operatorv1.ClusterCSIDriver
	if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &cr); err != nil {
		t.Fatal(err)
	}
	for _, f := range cr.Finalizers {
		if strings.HasPrefix(f, efs.FinalizerPrefix) {
			t.Errorf("release-finalizer left the operator's finalizer %s", f)
		}
	}
}

// catalogForm is the form of the certified catalog an install reads.
type catalogForm int

const (
	// publishedCatalog is the catalog image `csi-olm release` pushed: its bundles are images,
	// which OLM unpacks with bundle-unpack Jobs. Clusters install this form.
	publishedCatalog catalogForm = iota
	// offlineCatalog is the committed catalog built into an image: its bundles' objects are
	// embedded, so OLM reads them from the registry pod without unpacking anything.
	offlineCatalog
)

func (f catalogForm) String() string { return [...]string{"published", "offline"}[f] }

// installFromOperatorHub pushes the operator and the certified catalog in the given form,
// creates the CatalogSource and the Subscription an admin creates from OperatorHub, and waits for
// the operator's pod to be Ready. It returns the pod, the operator Deployment the CSV ships
// (which the pod must run unchanged), and how long each stage took.
func installFromOperatorHub(ctx context.Context, tb testing.TB, s *testbed.Stack, form catalogForm) (*corev1.Pod, operatorsv1alpha1.StrategyDeploymentSpec, map[string]time.Duration) {
	tb.Helper()
	c := s.Client
	// The CSV lists ClusterCSIDriver as a native API: OLM checks the cluster serves it. The
	// driver's controller pod mounts what the service CA and cloud-credential operators write.
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true, Version: clusterRelease(clusterMinor)}); err != nil {
		tb.Fatal(err)
	}
	// The admin adds the index of the minor the cluster reports, as README.md says, and installs
	// that minor's release.
	minor, err := kube.ClusterMinor(ctx, s.Config)
	if err != nil {
		tb.Fatal(err)
	}
	rel := efsReleaseFor(tb, minor)
	committed := readCSV(tb, committedCSVFile(rel.Version))
	ns := operatorHubNamespace(ctx, tb, s, committed)
	timings := map[string]time.Duration{}
	var catalogRef string
	var shipped operatorsv1alpha1.StrategyDeploymentSpec
	switch form {
	case publishedCatalog:
		p := publish(tb, s)
		catalogRef, shipped = p.catalogAt(tb, definition.Certified, minor), csvDeployment(tb, p.csvFile(efsPackage, rel.Version))
	case offlineCatalog:
		shipped = csvDeployment(tb, committedCSVFile(rel.Version))
		catalogRef = pushOperatorAndCatalog(tb, s, shipped.Spec.Template.Spec.Containers[0].Image, minor)
		pushDriverImages(tb, s, shipped.Spec.Template.Spec.Containers[0])
	}
	headCSV := committed.Name
	begin := time.Now()
	if err := s.CreateImageCatalogSource(ctx, testbed.OLMNamespace, certifiedSource, catalogRef); err != nil {
		tb.Fatal(err)
	}
	timings["catalog image -> CatalogSource READY"] = time.Since(begin)

	begin = time.Now()
	if err := c.Create(ctx, &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: efsPackage, Namespace: ns},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			Package: efsPackage, Channel: "stable", CatalogSource: certifiedSource,
			CatalogSourceNamespace: testbed.OLMNamespace, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
		},
	}); err != nil {
		tb.Fatal(err)
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: headCSV}}
	if err := testutil.Eventually(ctx, "CSV "+csv.Name+" created", func(ctx context.Context) error {
		return c.Get(ctx, client.ObjectKeyFromObject(csv), csv)
	}); err != nil {
		tb.Fatal(err)
	}
	created := time.Now()
	timings["Subscription -> CSV created"] = created.Sub(begin)
	if err := testbed.WaitForCSV(ctx, c, ns, headCSV, operatorsv1alpha1.CSVPhaseSucceeded); err != nil {
		tb.Fatal(err)
	}
	pod := operatorPod(ctx, tb, c, ns, shipped)
	timings["CSV created -> operator pod Ready"] = time.Since(created)
	if _, err := testbed.WaitForSubscription(ctx, c, ns, efsPackage, "AtLatestKnown "+headCSV, olm.AtLatestKnown(headCSV)); err != nil {
		tb.Fatal(err)
	}
	return pod, shipped, timings
}

// operatorHubNamespace creates what OperatorHub's install page creates for a CSV: its suggested
// namespace, labelled for cluster monitoring when the CSV asks for it (the page's checkbox is on
// by default then; the cluster's Prometheus reads ServiceMonitors only from such namespaces),
// and an OperatorGroup for all namespaces, the only install mode the EFS CSV supports.
func operatorHubNamespace(ctx context.Context, tb testing.TB, s *testbed.Stack, csv *operatorsv1alpha1.ClusterServiceVersion) string {
	tb.Helper()
	name := csv.Annotations["operatorframework.io/suggested-namespace"]
	if name == "" {
		tb.Fatalf("CSV %s suggests no namespace", csv.Name)
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if csv.Annotations[clusterMonitoringAnnotation] == "true" {
		namespace.Labels = map[string]string{clusterMonitoringLabel: "true"}
	}
	for _, obj := range []client.Object{namespace, &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: name}}} {
		if err := s.Client.Create(ctx, obj); err != nil {
			tb.Fatal(err)
		}
	}
	return name
}

// driverTimings are how long after the ClusterCSIDriver's creation the driver reached each stage.
type driverTimings struct {
	// applied: every object of the driver the operator ships (operator/assets.OperandFiles) exists.
	applied time.Duration
	// placed: the driver's pods are on the node; running: they are Running with every container Ready.
	placed, running time.Duration
}

// deployDriver creates the ClusterCSIDriver with create and waits until the operator in pod
// operator has applied every operand, the driver's pods are placed on the node, and they run
// there.
func deployDriver(ctx context.Context, tb testing.TB, s *testbed.Stack, operator *corev1.Pod, create func()) driverTimings {
	tb.Helper()
	c := s.Client
	driverNS := operator.Namespace
	operands := shippedOperands(tb, driverNS)
	begin := time.Now()
	create()
	var t driverTimings
	// Each operand is looked up until it is found, then no more: the check loads the cluster
	// less and less as the operator applies them.
	var found []string
	err := testutil.Eventually(ctx, "every operand applied", func(ctx context.Context) error {
		for len(operands) > 0 {
			if err := c.Get(ctx, client.ObjectKeyFromObject(operands[0]), operands[0].DeepCopy()); err != nil {
				return fmt.Errorf("%s %s: %w", operands[0].GetKind(), operands[0].GetName(), err)
			}
			found = append(found, fmt.Sprintf("%s %s %.2f s", operands[0].GetKind(), operands[0].GetName(), time.Since(begin).Seconds()))
			operands = operands[1:]
		}
		return nil
	})
	tb.Logf("operands found after (in the order looked up):\n  %s", strings.Join(found, "\n  "))
	if err != nil {
		tb.Fatalf("%v\noperator log:\n%s", err, tailLines(podLog(ctx, kubeClient(s), operator), 30))
	}
	t.applied = time.Since(begin)
	err = testutil.Eventually(ctx, "driver pods on "+testbed.RealNodeName, func(ctx context.Context) error {
		pods, err := driverPods(ctx, c, driverNS)
		if err != nil {
			return err
		}
		var onNode []string
		for _, p := range pods {
			if p.Spec.NodeName == testbed.RealNodeName {
				onNode = append(onNode, p.Name)
			}
		}
		if len(onNode) < 2 {
			return fmt.Errorf("driver pods on the node: %v", onNode)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("%v\noperator log:\n%s", err, tailLines(podLog(ctx, kubeClient(s), operator), 30))
	}
	t.placed = time.Since(begin)
	t.running = waitDriverRunning(ctx, tb, s, driverNS).Sub(begin)
	return t
}

// createClusterCSIDriver is the step of deployDriver that creates the ClusterCSIDriver, Managed,
// through the API.
func createClusterCSIDriver(ctx context.Context, tb testing.TB, c client.Client) func() {
	return func() {
		tb.Helper()
		if err := c.Create(ctx, &operatorv1.ClusterCSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: efs.CRName},
			Spec:       operatorv1.ClusterCSIDriverSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

// shippedOperands are the objects of the driver as the operator ships them (its embedded
// manifests), for an operator in namespace.
func shippedOperands(tb testing.TB, namespace string) []*unstructured.Unstructured {
	tb.Helper()
	read := assets.For(namespace)
	var objects []*unstructured.Unstructured
	for _, file := range assets.OperandFiles {
		raw, err := read(file)
		if err != nil {
			tb.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			tb.Fatalf("operator asset %s: %v", file, err)
		}
		objects = append(objects, obj)
	}
	return objects
}

// operatorPod waits for the one pod of the CSV's operator Deployment to be Ready.
func operatorPod(ctx context.Context, t testing.TB, c client.Client, ns string, shipped operatorsv1alpha1.StrategyDeploymentSpec) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	if err := testutil.Eventually(ctx, "the operator pod Ready", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(shipped.Spec.Selector.MatchLabels)); err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d operator pods", len(pods.Items))
		}
		pod = &pods.Items[0]
		if !testbed.PodReady(pod) {
			return fmt.Errorf("pod %s: phase %s, container statuses %+v", pod.Name, pod.Status.Phase, pod.Status.ContainerStatuses)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return pod
}

// assertRunsAsShipped checks that the pod runs the CSV's container unchanged: image, args,
// env, ServiceAccount, and no kubeconfig (in-cluster configuration).
func assertRunsAsShipped(t *testing.T, pod *corev1.Pod, shipped operatorsv1alpha1.StrategyDeploymentSpec) {
	t.Helper()
	want := shipped.Spec.Template.Spec
	got := pod.Spec
	if got.ServiceAccountName != want.ServiceAccountName {
		t.Errorf("the pod runs as ServiceAccount %q, the CSV says %q", got.ServiceAccountName, want.ServiceAccountName)
	}
	var container *corev1.Container
	for i := range got.Containers {
		if got.Containers[i].Name == want.Containers[0].Name {
			container = &got.Containers[i]
		}
	}
	if container == nil {
		t.Fatalf("the pod has no container %s", want.Containers[0].Name)
	}
	if container.Image != want.Containers[0].Image || !slices.Equal(container.Args, want.Containers[0].Args) || !slices.Equal(container.Command, want.Containers[0].Command) {
		t.Errorf("the pod runs %s %q %q, the CSV ships %s %q %q", container.Image, container.Command, container.Args,
			want.Containers[0].Image, want.Containers[0].Command, want.Containers[0].Args)
	}
	for _, e := range want.Containers[0].Env {
		if !slices.ContainsFunc(container.Env, func(g corev1.EnvVar) bool { return g.Name == e.Name }) {
			t.Errorf("the pod lacks the CSV's env %s", e.Name)
		}
	}
	for _, arg := range append(container.Args, container.Command...) {
		if strings.Contains(arg, "kubeconfig") {
			t.Errorf("the operator is given a kubeconfig (%s); it must use in-cluster configuration", arg)
		}
	}
}

func restartCount(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

func kubeClient(s *testbed.Stack) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(s.Config)
}

func podLog(ctx context.Context, clientset kubernetes.Interface, pod *corev1.Pod) string {
	raw, err := clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(raw)
}

func firstLineWith(text, word string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, word) {
			return line
		}
	}
	return ""
}

func tailLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
