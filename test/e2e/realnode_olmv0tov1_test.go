package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/definition"
	ebsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver/v1alpha1"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv1"
	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/ebs"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/progress"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// The steps of `csi-olm migrate olm-v1` and of its way back, as their journals name them, each
// preceded by the recording of the plan: the kill campaign kills the verb after each.
var (
	olmv1ForwardSteps = []string{"record", "delete-subscription", "mark-for-olm-v1", "release-from-olm-v0", "create-extension", "wait-installed", "delete-olm-v0-leftovers", "verify"}
	olmv1BackSteps    = []string{"record", "orphan-extension", "unmark", "restore-subscription", "wait-olm-v0", "delete-olm-v1-leftovers", "verify"}
)

// TestOLMv0ToOLMv1OnRealNode moves the EFS operator from OLM v0 to OLM v1 on the real node, with
// both OLMs running, as README.md's OLM v1 section says. An admin installed 4.10.0 from
// OperatorHub on an OpenShift 4.10 cluster (Subscription, CSV), the driver runs, and an app
// team's pod uses a SharedVolume's claim. `csi-olm migrate olm-v1`, as a release builds it,
// refuses a catalog that does not exist, plans, then runs killed after each of its steps and
// resumed: OLM v1 installs the same bundle from the ClusterCatalog of the same catalog image, and
// every kept object has the UID it had, no node plugin restarted, and the app's pod is the same
// pod. The way back runs killed after each of its steps too, and OLM v0 runs the same CSV again
// with everything kept; the move is made once more, then OLM v1 upgrades to 4.11.0 in one hop
// and uninstalls keeping the volumes (uninstallWithOLMv1).
func TestOLMv0ToOLMv1OnRealNode(t *testing.T) {
	stopRealNode() // a new cluster: OLM v0's Subscriptions of other flows would own the namespace
	s := startRealNode(t)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	c := s.Client
	p := publish(t, s)
	from, version := openshift.Minor{Major: 4, Minor: 10}, "4.10.0"
	csv := readCSV(t, p.csvFile(efsPackage, version))
	shipped := csvDeployment(t, p.csvFile(efsPackage, version))

	// OLM v0, as OperatorHub installs the operator on a 4.10 cluster.
	must(t, s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true, Version: clusterRelease(from)}))
	ns := operatorHubNamespace(ctx, t, s, csv)
	must(t, s.CreateImageCatalogSource(ctx, testbed.OLMNamespace, certifiedSource, p.catalogAt(t, definition.Certified, from)))
	must(t, c.Create(ctx, &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: efsPackage, Namespace: ns},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			Package: efsPackage, Channel: "stable", CatalogSource: certifiedSource,
			CatalogSourceNamespace: testbed.OLMNamespace, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
		},
	}))
	// While OLM v0 installs, which is mostly waiting on its registry pod and bundle Job: OLM v1
	// starts beside it, serving the same catalog image, and OLM v0 begins the install of the
	// second operator, which moves last.
	startOLMv1(ctx, t, s, p, olmv1Timings{}, from, definition.Certified)
	second := installSecondOperator(ctx, t, s, p)
	must(t, testbed.WaitForCSV(ctx, c, ns, csv.Name, operatorsv1alpha1.CSVPhaseSucceeded))
	operator := operatorPod(ctx, t, c, ns, shipped)
	deployDriver(ctx, t, s, operator, createClusterCSIDriver(ctx, t, c))
	appTeamMountsASharedVolume(ctx, t, s)
	createOLMv1Installer(ctx, t, s, ns)
	conf, err := s.HostRegistriesConf()
	must(t, err)
	// The verb reads the catalog and bundle images as an admin's workstation does, through the
	// mirrors of its registries.conf; the test is not parallel.
	t.Setenv("CONTAINERS_REGISTRIES_CONF", conf)
	bin := testutil.BuildBinary(t, "github.com/csi-olm/csi-olm/cmd/csi-olm", "csiolm_killhook")
	before := olmv1KeptState(ctx, t, c, ns)
	if len(before) < 10 {
		t.Fatalf("the state to keep is too small to prove anything: %v", before)
	}

	// A catalog that does not exist is refused, and nothing changes.
	out, err := cli(bin, s, "migrate", "olm-v1", "--catalog", "no-such-catalog")
	if err == nil || !strings.Contains(out, "ClusterCatalog no-such-catalog does not exist") || !strings.Contains(out, "nothing was changed") {
		t.Errorf("migrating from a ClusterCatalog that does not exist: %v\n%s", err, out)
	}
	assertOLMv0Runs(ctx, t, c, ns, csv.Name)

	// The plan, a dry run.
	args := []string{"migrate", "olm-v1", "--catalog", string(definition.Certified), "--timeout", "5m"}
	begin := time.Now()
	out, err = cli(bin, s, args...)
	if err != nil {
		t.Fatalf("the dry run: %v\n%s", err, out)
	}
	t.Logf("the plan, in %s:\n%s", time.Since(begin).Round(100*time.Millisecond), out)
	for _, want := range []string{
		"installed:      " + csv.Name + " (version " + version + ") in namespace " + ns,
		"extension:      ClusterExtension " + efsPackage + ", version " + version + " exactly, from ClusterCatalog certified",
		"- CustomResourceDefinition " + efs.SharedVolumeCRD,
		"- Deployment " + ns + "/" + shipped.Name,
		"- DaemonSet " + ns + "/" + efs.NodeDaemonSet,
		"- ClusterCSIDriver " + efs.CRName,
		"1 sharedvolumes.aws-efs.managed.openshift.io",
		"next upgrade:   none: " + version + " is the newest bundle",
		"Back to OLM v0, from any step: csi-olm migrate olm-v1 --back --package " + efsPackage + " --confirm",
		"dry run: nothing changed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan lacks %q", want)
		}
	}
	assertOLMv0Runs(ctx, t, c, ns, csv.Name)

	// Prediction first: from the OLM v0 cluster, where OLM v1 takes the moved install on its next
	// upgrade, once the catalog serves the next minor's bundles.
	nextCSV := predictOLMv1Upgrade(ctx, t, s, from.Next(), csv.Name)
	if want := readCSV(t, p.csvFile(efsPackage, "4.11.0")).Name; nextCSV != want {
		t.Errorf("simulate --olm v1 --from-cluster predicts the next upgrade to %s, want %s", nextCSV, want)
	}

	// The kill campaign: each round moves to OLM v1 and back, the verb killed after each step
	// and run again. Rounds after the first kill it at random moments instead, within a step
	// as well as between steps. `make chaos` runs more rounds.
	rounds := 1
	if v := os.Getenv(olmv1RoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number of rounds, 1 or more", olmv1RoundsEnv, v)
		}
		rounds = n
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	backArgs := []string{"migrate", "olm-v1", "--back", "--timeout", "5m"}
	kills := 0
	for round := 1; round <= rounds; round++ {
		for _, leg := range []struct {
			args  []string
			steps []string
			done  string
			check func(string)
		}{
			{args, olmv1ForwardSteps, "ClusterExtension " + efsPackage + " installs " + efsPackage + " " + version + ", adopted from OLM v0", func(when string) {
				assertOLMv1Runs(ctx, t, s, p, ns, version)
				assertKeptState(ctx, t, c, ns, before, when)
				// README.md says what the move cannot keep: the operator's own pod, which OLM
				// v1's rendering of the same Deployment rolls.
				if now := operatorPod(ctx, t, c, ns, shipped); round == 1 && now.UID == operator.UID {
					t.Errorf("%s, the operator's pod %s is the one from before: README.md says the move rolls it", when, now.Name)
				}
			}},
			{backArgs, olmv1BackSteps, "OLM v0 installs " + efsPackage + " again", func(when string) {
				assertOLMv0Runs(ctx, t, c, ns, csv.Name)
				ce := efsExtension()
				if err := c.Get(ctx, client.ObjectKeyFromObject(ce), ce); !apierrors.IsNotFound(err) {
					t.Errorf("%s, the ClusterExtension: %v", when, err)
				}
				assertKeptState(ctx, t, c, ns, before, when)
			}},
		} {
			begin := time.Now()
			if round == 1 {
				for _, step := range leg.steps {
					runKilled(t, bin, s, step, leg.args...)
					kills++
				}
			} else {
				for i := 0; i < len(leg.steps); i++ {
					if killedAt(t, bin, s, time.Duration(rng.Int64N(int64(15*time.Second))), leg.args...) {
						kills++
					}
				}
			}
			out := run(t, bin, s, leg.args...)
			t.Logf("round %d, %s: %s with kills", round, strings.Join(leg.args[:3], " "), time.Since(begin).Round(time.Second))
			if !strings.Contains(out, leg.done) {
				t.Fatalf("round %d: the last run did not finish:\n%s", round, out)
			}
			leg.check(fmt.Sprintf("round %d, after %s", round, strings.Join(leg.args, " ")))
		}
	}
	t.Logf("%d rounds, %d kills: %d kept objects checked after each leg, none lost, no node plugin restarted", rounds, kills, len(before))

	// Once more to OLM v1, uninterrupted, as README.md's "Moving to OLM v1" says, with csi-olm as
	// a release ships it; then OLM v1 upgrades and uninstalls.
	begin = time.Now()
	newAdminShell(t, s).runSection(ctx, t, quickStartBlocks(t, adminQuickStart), olmv1Section)
	t.Logf("README.md's move to OLM v1, its plan and the move: %s", time.Since(begin).Round(100*time.Millisecond))
	assertOLMv1Runs(ctx, t, s, p, ns, version)
	assertKeptState(ctx, t, c, ns, before, "after the second move to OLM v1")

	must(t, s.SetClusterCatalogImage(ctx, string(definition.Certified), p.catalogAt(t, definition.Certified, from.Next())))
	patchOLMv1Catalog(ctx, t, s, map[string]any{"version": "4.11.0"})
	upgraded := waitForOLMv1Operator(ctx, t, s, p, ns, "4.11.0")
	var installed unstructured.Unstructured
	installed.SetGroupVersionKind(testbed.ClusterExtensionGVK)
	must(t, c.Get(ctx, client.ObjectKey{Name: efsPackage}, &installed))
	if name, _, _ := unstructured.NestedString(installed.Object, "status", "install", "bundle", "name"); name != nextCSV {
		t.Errorf("OLM v1 upgraded to %s, simulate predicted %s", name, nextCSV)
	}
	assertRunsAsShipped(t, upgraded, p.operator(t))
	// The second operator's moves give the upgraded operator time to meet a refusal, if any.
	begin = time.Now()
	second.moves(ctx, t, s, bin)
	if ran := time.Since(begin); ran < 20*time.Second {
		time.Sleep(20*time.Second - ran)
	}
	if line := firstLineWith(podLog(ctx, kubeClient(s), upgraded), "forbidden"); line != "" {
		t.Errorf("the operator OLM v1 upgraded was refused by the API server: %s", line)
	}
	uninstallWithOLMv1(ctx, t, s, upgraded)
}

// ebsOperatorImage is the OLM-era EBS operator's image, as its 4.5.0 CSV names it.
const ebsOperatorImage = "quay.io/openshift/origin-aws-ebs-csi-driver-operator:4.5"

// secondOperator is the OLM-era AWS EBS operator (4.5.0, of OpenShift 4.5's certified catalog:
// a cluster-scoped CR, a CRD without webhooks, an AllNamespaces install), which shows the verb is
// not EFS's alone.
type secondOperator struct {
	ns, image string
}

const secondOperatorCSV = "aws-ebs-csi-driver-operator.v4.5.0"

// installSecondOperator begins the second operator's install as OperatorHub does, in the
// namespace its CSV suggests, and returns without waiting for OLM v0 to finish it. Its catalog
// is a CatalogSource of that namespace, which only its Subscription sees: one in OLM's global
// namespace, until its registry pod serves, fails OLM v0's resolution of every Subscription of
// the cluster (ResolutionFailed, connection refused), the EFS operator's too, and OLM did not
// resolve that again for minutes.
func installSecondOperator(ctx context.Context, t *testing.T, s *testbed.Stack, p *published) *secondOperator {
	t.Helper()
	const source = "certified-operators-v4-5"
	op := &secondOperator{image: p.catalogAt(t, definition.Certified, openshift.Minor{Major: 4, Minor: 5})}
	op.ns = operatorHubNamespace(ctx, t, s, readCSV(t, filepath.Join("..", "..", "bundle", ebs.Package, "4.5.0", "manifests", secondOperatorCSV+".clusterserviceversion.yaml")))
	must(t, s.CreateImageCatalogSource(ctx, op.ns, source, op.image))
	must(t, s.Client.Create(ctx, &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: ebs.Package, Namespace: op.ns},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			Package: ebs.Package, Channel: "preview", CatalogSource: source,
			CatalogSourceNamespace: op.ns, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
		},
	}))
	return op
}

// moves waits for OLM v0's install of the second operator, creates its CR, and moves it to OLM v1
// from a ClusterCatalog of the same catalog image with --package, keeping its CRD, its CR and its
// Deployment, and back.
func (op *secondOperator) moves(ctx context.Context, t *testing.T, s *testbed.Stack, bin string) {
	t.Helper()
	const catalog, csvName = "certified-v4-5", secondOperatorCSV
	c, ns := s.Client, op.ns
	must(t, testbed.WaitForCSV(ctx, c, ns, csvName, operatorsv1alpha1.CSVPhaseSucceeded))
	cr := &ebsv1alpha1.AWSEBSDriver{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: ebsv1alpha1.AWSEBSDriverSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}}}
	must(t, c.Create(ctx, cr))
	must(t, s.CreateClusterCatalog(ctx, catalog, op.image, 0))
	must(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ebs.Package + "-installer"}}))
	must(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ebs.Package + "-installer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: ebs.Package + "-installer"}},
	}))
	kept := []client.Object{
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "awsebsdrivers.csi.openshift.io"}},
		cr,
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ebs.OperatorName}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ebs.OperatorName}},
	}
	uids := map[string]types.UID{}
	for _, o := range kept {
		must(t, c.Get(ctx, client.ObjectKeyFromObject(o), o))
		uids[fmt.Sprintf("%T %s", o, o.GetName())] = o.GetUID()
	}
	assertKept := func(when string) {
		t.Helper()
		for _, o := range kept {
			key := fmt.Sprintf("%T %s", o, o.GetName())
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil || o.GetUID() != uids[key] || o.GetDeletionTimestamp() != nil {
				t.Errorf("%s, %s: %v (UID %s, was %s)", when, key, err, o.GetUID(), uids[key])
			}
		}
	}
	args := []string{"migrate", "olm-v1", "--package", ebs.Package, "--catalog", catalog, "--timeout", "5m"}
	out := run(t, bin, s, args...)
	if !strings.Contains(out, "ClusterExtension "+ebs.Package+" installs "+ebs.Package+" 4.5.0, adopted from OLM v0") {
		t.Errorf("the EBS operator's move did not finish:\n%s", out)
	}
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(testbed.ClusterExtensionGVK)
	must(t, c.Get(ctx, client.ObjectKey{Name: ebs.Package}, ce))
	if name, _, _ := unstructured.NestedString(ce.Object, "status", "install", "bundle", "name"); name != csvName || testbed.ConditionStatus(ce, "Installed") != "True" {
		t.Errorf("the EBS operator's ClusterExtension installed %q, Installed %s", name, testbed.ConditionStatus(ce, "Installed"))
	}
	assertKept("after the EBS operator's move to OLM v1")
	run(t, bin, s, "migrate", "olm-v1", "--package", ebs.Package, "--back", "--timeout", "5m")
	must(t, testbed.WaitForCSV(ctx, c, ns, csvName, operatorsv1alpha1.CSVPhaseSucceeded))
	assertKept("after the EBS operator's way back to OLM v0")
}

// predictOLMv1Upgrade runs `catalog simulate --olm v1 --from-cluster` on the certified catalog of
// minor and returns the bundle of the first upgrade it predicts from the installed CSV.
func predictOLMv1Upgrade(ctx context.Context, t *testing.T, s *testbed.Stack, minor openshift.Minor, installed string) string {
	t.Helper()
	var out bytes.Buffer
	a := &simulate.Simulate{
		OLM: "v1", Catalog: filepath.Join("..", "..", "catalog", "certified", minor.Index()), FromCluster: true,
		Cluster: kube.ClusterOptions{Config: s.Config}, Output: "json", Out: &out,
	}
	if err := a.Run(ctx); err != nil {
		t.Fatalf("simulate --olm v1 --from-cluster: %v\n%s", err, out.String())
	}
	var got struct{ Paths []olmv1.Path }
	must(t, json.Unmarshal(out.Bytes(), &got))
	for _, p := range got.Paths {
		if p.Start != nil && p.Start.Name == installed && len(p.Steps) > 0 {
			return p.Steps[0].To
		}
	}
	t.Fatalf("simulate --olm v1 --from-cluster predicts no upgrade from %s:\n%s", installed, out.String())
	return ""
}

// olmv1RoundsEnv sets the rounds of TestOLMv0ToOLMv1OnRealNode's kill campaign.
const olmv1RoundsEnv = "CSI_OLM_OLMV1_KILL_ROUNDS"

// killedAt runs the verb with --confirm and kills it with SIGKILL after delay, unless it ended
// before; it reports whether it killed it. A run that ends on its own must have succeeded.
func killedAt(t *testing.T, bin string, s *testbed.Stack, delay time.Duration, args ...string) bool {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--kubeconfig", s.Kubeconfig, "--confirm")...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the verb failed before it was killed: %v\n%s", err, out.String())
		}
		return false
	case <-time.After(delay):
		_ = cmd.Process.Kill()
		<-done
		return true
	}
}

// cli runs csi-olm against the stack, and returns its output.
func cli(bin string, s *testbed.Stack, args ...string) (string, error) {
	out, err := exec.Command(bin, append(args, "--kubeconfig", s.Kubeconfig)...).CombinedOutput()
	return string(out), err
}

// olmv1KeptState is what the move must keep, by kind, namespace and name: each object's UID, and
// for pods the restarts of their containers.
func olmv1KeptState(ctx context.Context, tb testing.TB, c client.Client, ns string) map[string]string {
	tb.Helper()
	state := map[string]string{}
	keep := func(o client.Object) {
		key := fmt.Sprintf("%T %s", o, client.ObjectKeyFromObject(o))
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			state[key] = "missing: " + err.Error()
			return
		}
		state[key] = string(o.GetUID())
		if o.GetDeletionTimestamp() != nil {
			state[key] += " deleting"
		}
		if p, ok := o.(*corev1.Pod); ok {
			state[key] += fmt.Sprintf(" restarts=%d", restartCount(p))
		}
	}
	for _, o := range []client.Object{
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: efs.SharedVolumeCRD}},
		&operatorv1.ClusterCSIDriver{ObjectMeta: metav1.ObjectMeta{Name: efs.CRName}},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: efs.DriverName}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.OperatorName}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.OperatorName}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "uses-shared-data"}},
		// The roles OLM v0 aggregated for the CRD, which the app team's RoleBindings grant.
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: efs.SharedVolumeCRD + "-v1alpha1-edit"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: efs.SharedVolumeCRD + "-v1alpha1-view"}},
	} {
		keep(o)
	}
	var svs sharedvolumev1alpha1.SharedVolumeList
	must(tb, c.List(ctx, &svs))
	for i := range svs.Items {
		sv := &svs.Items[i]
		keep(sv.DeepCopy())
		if ref := sv.Status.ClaimRef; ref != nil {
			keep(&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: sv.Namespace, Name: ref.Name}})
		}
	}
	var pvs corev1.PersistentVolumeList
	must(tb, c.List(ctx, &pvs))
	for i := range pvs.Items {
		keep(pvs.Items[i].DeepCopy())
	}
	// The node plugins: replaced, they would leave the node unable to mount for a while.
	pods, err := driverPods(ctx, c, ns)
	must(tb, err)
	for i := range pods {
		if strings.HasPrefix(pods[i].Name, efs.NodeDaemonSet+"-") {
			keep(pods[i].DeepCopy())
		}
	}
	return state
}

// assertKeptState checks that the state to keep is what it was before.
func assertKeptState(ctx context.Context, t *testing.T, c client.Client, ns string, before map[string]string, when string) {
	t.Helper()
	now := olmv1KeptState(ctx, t, c, ns)
	for _, key := range slices.Sorted(maps.Keys(before)) {
		if now[key] != before[key] {
			t.Errorf("%s, %s is %q, was %q", when, key, now[key], before[key])
		}
	}
}

// assertOLMv0Runs checks that OLM v0 runs the CSV: its Subscription installed it, and it
// Succeeded.
func assertOLMv0Runs(ctx context.Context, t *testing.T, c client.Client, ns, csvName string) {
	t.Helper()
	if _, err := testbed.WaitForSubscription(ctx, c, ns, efsPackage, "installedCSV "+csvName, func(sub *operatorsv1alpha1.Subscription) bool {
		return sub.Status.InstalledCSV == csvName
	}); err != nil {
		t.Fatal(err)
	}
	must(t, testbed.WaitForCSV(ctx, c, ns, csvName, operatorsv1alpha1.CSVPhaseSucceeded))
}

// assertOLMv1Runs checks that OLM v1 installed the version and runs its operator, and that OLM v0
// installs nothing any more there: no Subscription, no CSV but the copies OLM v0 makes in every
// namespace of an AllNamespaces operator installed elsewhere (the second operator's).
func assertOLMv1Runs(ctx context.Context, t *testing.T, s *testbed.Stack, p *published, ns, version string) {
	t.Helper()
	waitForOLMv1Operator(ctx, t, s, p, ns, version)
	var subs operatorsv1alpha1.SubscriptionList
	var list operatorsv1alpha1.ClusterServiceVersionList
	must(t, s.Client.List(ctx, &subs, client.InNamespace(ns)))
	must(t, s.Client.List(ctx, &list, client.InNamespace(ns)))
	var csvs []string
	for _, csv := range list.Items {
		if !operatorsv1alpha1.IsCopied(&csv) {
			csvs = append(csvs, csv.Name)
		}
	}
	if len(subs.Items) != 0 || len(csvs) != 0 {
		t.Errorf("after the move, OLM v0 still has %d Subscriptions and the CSVs %v in %s", len(subs.Items), csvs, ns)
	}
	// Every object OLM v1 adopted names the ClusterExtension as its controller.
	ce := efsExtension()
	must(t, s.Client.Get(ctx, client.ObjectKeyFromObject(ce), ce))
	for _, o := range []client.Object{
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: efs.SharedVolumeCRD}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.OperatorName}},
	} {
		must(t, s.Client.Get(ctx, client.ObjectKeyFromObject(o), o))
		if owner := metav1.GetControllerOf(o); owner == nil || owner.UID != ce.GetUID() {
			t.Errorf("%T %s is controlled by %+v, not by ClusterExtension %s", o, o.GetName(), owner, ce.GetName())
		}
	}
}
