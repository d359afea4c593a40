package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// communityCSVFile is the community operator's head CSV as the field has it.
var communityCSVFile = filepath.Join("..", "..", "bundle", efsPackage, "0.0.8", "manifests", communityHeadCSV+".clusterserviceversion.yaml")

// pushStandIn pushes, under ref, an image that runs the pause binary: as its entrypoint, and
// under every command name given, so a pod that runs one of those commands stays up. It stands
// in for images of other projects that are not built here.
func pushStandIn(t testing.TB, s *testbed.Stack, ref string, commands ...string) {
	t.Helper()
	pause, err := os.ReadFile(s.Tools().Pause)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"/pause"}
	for _, c := range commands {
		paths = append(paths, "/bin/"+c)
	}
	if err := s.PushBinaryImage(context.Background(), ref, testbed.BinaryImage{Binary: pause, Paths: paths}); err != nil {
		t.Fatal(err)
	}
}

// communityOperator is the container of the community CSV's operator Deployment.
func communityOperator(t testing.TB) corev1.Container {
	t.Helper()
	return csvDeployment(t, communityCSVFile).Spec.Template.Spec.Containers[0]
}

// TestSourceSwitchOnRealNode is the community user's upgrade on a real node, on a cluster at the
// oldest minor the EFS operator has a release for: the community operator installed from that
// minor's community catalog image (its pod runs a stand-in of the community image, which is not
// built here) with the driver it deployed running on the node. A SharedVolume the certified CRD
// refuses first stops the verb's switch and fails the InstallPlan of a switch by hand
// (invalidSharedVolumeStopsTheSwitch); fixed, the verb as README.md runs it takes that switch
// over, clears the failed InstallPlan and goes on: the Subscription's source is that minor's
// certified catalog image, as README.md says. OLM must replace the CSV with the
// minor's release of the supported operator, whose pod runs from its image as the CSV ships it,
// and which adopts the running driver in place for the ClusterCSIDriver. The cluster then
// upgrades to the next minor, with OLM judging the installed release before and after and
// taking it where `catalog cluster-upgrade` says (upgradeClusterThroughMinors). Last, the admin
// uninstalls only the operator, as README.md's uninstall says one may: the adopted driver stays
// exactly as it was, and the release verbs stand in for the gone operator.
func TestSourceSwitchOnRealNode(t *testing.T) {
	stopRealNode() // a new cluster: a Subscription of another flow would stand in the way
	s := startRealNode(t)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	c, ns := s.Client, testbed.OperatorsNamespace
	releases := efsReleases(t)
	first, minor := releases[0], minorOf(t, releases[0])

	// Both catalogs of the cluster's minor as a release published them, bundles as images.
	p := publish(t, s)
	firstCSV := readCSV(t, p.csvFile(efsPackage, first.Version)).Name
	shipped := csvDeployment(t, p.csvFile(efsPackage, first.Version))
	communityRef, certifiedRef := p.catalogAt(t, definition.Community, minor), p.catalogAt(t, definition.Certified, minor)
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true, Version: clusterRelease(minor)}); err != nil {
		t.Fatal(err)
	}
	for name, ref := range map[string]string{communitySource: communityRef, certifiedSource: certifiedRef} {
		if err := s.CreateImageCatalogSource(ctx, testbed.OLMNamespace, name, ref); err != nil {
			t.Fatal(err)
		}
	}
	f := &olmFixture{stack: s}
	f.installCommunity(ctx, t)
	objects, err := fixture.CommunityDriver(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	ds := objects[len(objects)-1].(*appsv1.DaemonSet)

	// The operator keeps running in the community's namespace, which the cluster's Prometheus
	// does not scrape: the verb's plan says so and how to change it, and the admin does.
	var plan bytes.Buffer
	if err := migrateSubscription(ctx, s, true, &plan); err != nil {
		t.Fatalf("%v\n%s", err, plan.String())
	}
	label := fmt.Sprintf("oc label namespace %s %s=true", ns, clusterMonitoringLabel)
	if !strings.Contains(plan.String(), label) {
		t.Errorf("the plan does not tell the admin to run %q:\n%s", label, plan.String())
	}
	// The plan read the CRD of the bundle it lands on from its image, through the mirror.
	if checked := "valid under the SharedVolume CRD of " + firstCSV; !strings.Contains(plan.String(), checked) {
		t.Errorf("the plan does not say the SharedVolumes are %s:\n%s", checked, plan.String())
	}
	var namespace corev1.Namespace
	must(t, c.Get(ctx, client.ObjectKey{Name: ns}, &namespace))
	labelled := client.MergeFrom(namespace.DeepCopy())
	metav1.SetMetaDataLabel(&namespace.ObjectMeta, clusterMonitoringLabel, "true")
	must(t, c.Patch(ctx, &namespace, labelled))
	actAsClusterPrometheus(ctx, t, s)

	invalidSharedVolumeStopsTheSwitch(ctx, t, s, ns, firstCSV)

	// The admin switches as README.md's quick start says, with csi-olm as a release ships it.
	begin := time.Now()
	newAdminShell(t, s).runSection(ctx, t, quickStartBlocks(t, adminQuickStart), switchSection)
	if _, err := testbed.WaitForSubscription(ctx, c, ns, efsPackage, "AtLatestKnown "+firstCSV, olm.AtLatestKnown(firstCSV)); err != nil {
		t.Fatal(err)
	}
	if err := testbed.WaitForCSV(ctx, c, ns, firstCSV, operatorsv1alpha1.CSVPhaseSucceeded); err != nil {
		t.Fatal(err)
	}
	pod := operatorPod(ctx, t, c, ns, shipped)
	assertRunsAsShipped(t, pod, shipped)
	t.Logf("source switch -> supported operator pod Ready: %s", time.Since(begin).Round(100*time.Millisecond))

	// The alert that the driver is not enabled fires from where the operator runs: the operator
	// points its bundle's ServiceMonitor at the certificate of this namespace.
	serverName := efs.OperatorMetricsService + "." + ns + ".svc"
	must(t, testutil.Eventually(ctx, "the ServiceMonitor verifying "+serverName, func(ctx context.Context) error {
		var monitor monitoringv1.ServiceMonitor
		if err := getTyped(ctx, s, monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.ServiceMonitorsKind), ns, efs.OperatorName, &monitor); err != nil {
			return err
		}
		if tls := monitor.Spec.Endpoints[0].TLSConfig; tls == nil || tls.ServerName == nil || *tls.ServerName != serverName {
			return fmt.Errorf("ServiceMonitor %s/%s verifies %+v", ns, monitor.Name, tls)
		}
		return nil
	}))
	if n := notEnabledSeries(ctx, t, s, ns, scrapeOperator(ctx, t, s, ns)); n != 1 {
		t.Errorf("after the switch, without the ClusterCSIDriver, %s's expression gives %d series, want 1", notEnabledAlert, n)
	}

	adoptOnClusterCSIDriver(ctx, t, s, ds, shipped, pod)
	if n := notEnabledSeries(ctx, t, s, ns, scrapeOperator(ctx, t, s, ns)); n != 0 {
		t.Errorf("with the ClusterCSIDriver, %s's expression gives %d series, want 0", notEnabledAlert, n)
	}
	// One cluster upgrade: each further one proves the same on the same code, and costs the
	// real-node lane, the longest of .ci/run, half a minute. The check follows them all.
	pod, installed := upgradeClusterThroughMinors(ctx, t, s, p, ns, releases[:2])
	// The admin then uninstalls only the operator: the driver it adopted, rolled out to its
	// release, keeps serving.
	waitDriverRolledOut(ctx, t, s, ns, csvDeployment(t, p.csvFile(efsPackage, releases[1].Version)))
	uninstallOnlyTheOperator(ctx, t, s, pod, installed)
}

// envOf is the value of a container's environment variable, "" when it has none.
func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// adoptOnClusterCSIDriver creates the ClusterCSIDriver and checks that the operator in pod
// adopts the running community DaemonSet ds in place (same UID, the community label gone, the
// driver image of the shipped CSV) and that the driver then runs Ready.
func adoptOnClusterCSIDriver(ctx context.Context, t *testing.T, s *testbed.Stack, ds *appsv1.DaemonSet, shipped operatorsv1alpha1.StrategyDeploymentSpec, pod *corev1.Pod) {
	t.Helper()
	c, uid := s.Client, ds.UID
	begin := time.Now()
	createClusterCSIDriver(ctx, t, c)()
	driverImage := envOf(shipped.Spec.Template.Spec.Containers[0], efs.DriverImageEnv)
	if err := testutil.Eventually(ctx, "the running DaemonSet adopted", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			return err
		}
		if ds.UID != uid {
			return fmt.Errorf("the DaemonSet was re-created: UID %s, was %s", ds.UID, uid)
		}
		if _, ok := ds.Labels[efs.CommunityOwnedLabel]; ok {
			return fmt.Errorf("the DaemonSet still carries the community label")
		}
		if img := ds.Spec.Template.Spec.Containers[0].Image; img != driverImage {
			return fmt.Errorf("the DaemonSet runs %s, not the CSV's driver %s", img, driverImage)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\noperator log:\n%s", err, tailLines(podLog(ctx, kubeClient(s), pod), 30))
	}
	t.Logf("ClusterCSIDriver -> the running driver adopted: %s", time.Since(begin).Round(100*time.Millisecond))
	ready := waitDriverRunning(ctx, t, s, ds.Namespace)
	t.Logf("ClusterCSIDriver -> the adopted driver Running and Ready: %s", ready.Sub(begin).Round(100*time.Millisecond))
}
