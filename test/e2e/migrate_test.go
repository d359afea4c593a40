package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/migrate"
	"github.com/csi-olm/csi-olm/migrate/cso"
	"github.com/csi-olm/csi-olm/migrate/subscription"
	"github.com/csi-olm/csi-olm/release"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// migrateSubscription runs `csi-olm migrate subscription` towards the certified catalog.
func migrateSubscription(ctx context.Context, s *testbed.Stack, dryRun bool, out *bytes.Buffer) error {
	// Bundle images are read as an admin's workstation reads them: from the mirrors of its
	// registries.conf.
	conf, err := s.HostRegistriesConf()
	if err != nil {
		return err
	}
	return (&subscription.Migrate{
		Options: options(s, dryRun, out), Source: certifiedSource, SourceNamespace: testbed.OLMNamespace,
	}).Run(load.WithRegistry(ctx, load.Registry{RegistriesConf: conf}))
}

// migrateCSO runs `csi-olm migrate cso` for a driver.
func migrateCSO(ctx context.Context, s *testbed.Stack, driver string, dryRun bool, out *bytes.Buffer) error {
	return (&cso.Migrate{Options: options(s, dryRun, out), Driver: driver, AcceptNamespaceMove: true}).Run(ctx)
}

func options(s *testbed.Stack, dryRun bool, out *bytes.Buffer) migrate.Options {
	return migrate.Options{ClusterOptions: kube.ClusterOptions{Config: s.Config, DryRun: dryRun}, Output: "text", Timeout: 2 * time.Minute, Out: out, Progress: out}
}

func TestMigrateSubscription(t *testing.T) {
	t.Parallel()
	// Parallel tests cannot use t.Setenv; no other test of this package reads these variables.
	must(t, fixture.ExportOperatorEnv())
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	e := installCommunityEFS(ctx, t, startOLMFixture(ctx, t))
	c := e.stack.Client

	// A catalog image of another minor's index is refused before anything changes.
	older := openshift.Minor{Major: clusterMinor.Major, Minor: clusterMinor.Minor - 1}
	olderImage := release.CatalogImage("localhost:5000/csi-olm", string(definition.Certified), older.Index())
	olderSource := &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: "certified-operators-" + older.Index(), Namespace: testbed.OLMNamespace},
		Spec:       operatorsv1alpha1.CatalogSourceSpec{SourceType: operatorsv1alpha1.SourceTypeGrpc, Image: olderImage},
	}
	must(t, c.Create(ctx, olderSource))
	before := snapshot(ctx, t, c)
	var refused bytes.Buffer
	err := (&subscription.Migrate{Options: options(e.stack, false, &refused), Source: "certified-operators-" + older.Index(), SourceNamespace: testbed.OLMNamespace}).Run(ctx)
	wantRefusal := fmt.Sprintf("serves %s, the index of OpenShift %s, but the cluster runs OpenShift %s", olderImage, older, clusterMinor)
	if err == nil || !strings.Contains(err.Error(), wantRefusal) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("migrating to the %s catalog on a cluster at %s: %v, want an error saying %q\n%s", older.Index(), clusterMinor, err, wantRefusal, refused.String())
	}
	assertUnchanged(ctx, t, c, before)
	// Its image is pushed nowhere, and OLM resolves every Subscription against every source of
	// its global namespace: the source goes before anything resolves again.
	must(t, c.Delete(ctx, olderSource))
	must(t, testutil.Eventually(ctx, "CatalogSource "+olderSource.Name+" gone", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(olderSource), olderSource); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	}))

	var out bytes.Buffer
	must(t, migrateSubscription(ctx, e.stack, true, &out))
	for _, want := range []string{
		"catalog:    openshift-marketplace/community-operators -> openshift-marketplace/csi-olm-certified",
		"upgrade to: " + certifiedHeadCSV + ", the head of stable (" + certifiedHeadCSV + " by skipRange >=0.0.6 <4.11.0)",
		"DaemonSet openshift-operators/efs-csi-node must keep running",
		"3 Ready SharedVolumes must stay Ready",
		"dry run: nothing changed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the plan lacks %q:\n%s", want, out.String())
		}
	}
	// The plan as JSON, for scripts: progress goes elsewhere, so stdout decodes.
	var planJSON, progress bytes.Buffer
	opts := options(e.stack, true, &planJSON)
	opts.Output, opts.Progress = "json", &progress
	must(t, (&subscription.Migrate{Options: opts, Source: certifiedSource, SourceNamespace: testbed.OLMNamespace}).Run(ctx))
	var plan subscription.Plan
	if err := json.Unmarshal(planJSON.Bytes(), &plan); err != nil {
		t.Fatalf("stdout is not the JSON plan alone: %v\n%s", err, planJSON.String())
	}
	if plan.Upgrade.Head != certifiedHeadCSV || plan.InstalledCSV != communityHeadCSV || len(plan.ReadySharedVolumes) != 3 || plan.OriginalSpec.CatalogSource != communitySource {
		t.Errorf("the JSON plan: %+v", plan)
	}
	assertUnchanged(ctx, t, c, before)

	out.Reset()
	if err := migrateSubscription(ctx, e.stack, false, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	e.assertSwitched(ctx, t)
	if !strings.Contains(out.String(), "Reminder: the supported operator does nothing until ClusterCSIDriver efs.csi.aws.com exists") {
		t.Errorf("no reminder to create the CR:\n%s", out.String())
	}

	// A second run finds the completed journal and changes nothing.
	out.Reset()
	must(t, migrateSubscription(ctx, e.stack, false, &out))
	if !strings.Contains(out.String(), "switch Subscription openshift-operators/aws-efs-operator to catalog openshift-marketplace/csi-olm-certified, channel stable: done before") {
		t.Errorf("the rerun did not resume from the journal:\n%s", out.String())
	}

	// The supported operator adopts the community driver once the admin creates the CR.
	fixture.RunOperator(t, e.stack.Config, testbed.OperatorsNamespace)
	must(t, c.Create(ctx, &operatorv1.ClusterCSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: efs.CRName},
		Spec:       operatorv1.ClusterCSIDriverSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
	}))
	ds := e.driver.DeepCopy()
	must(t, testutil.Eventually(ctx, "the driver DaemonSet to run the supported driver", func(ctx context.Context) error {
		if err := fixture.Available(c, ds)(ctx); err != nil {
			return err
		}
		if img := ds.Spec.Template.Spec.Containers[0].Image; img != fixture.Images[efs.DriverImageEnv] {
			return errors.New("image " + img)
		}
		return nil
	}))
	if ds.UID != e.driver.UID {
		t.Error("the driver DaemonSet was re-created instead of adopted")
	}
	if _, ok := ds.Labels[efs.CommunityOwnedLabel]; ok {
		t.Error("the adopted DaemonSet still carries the community label")
	}
	e.assertVolumesUntouched(ctx, t)
}

// TestMigrateCSO is the heaviest end-to-end test (two drivers installed by OLM, three
// migrations), so it gets more time than the others when CI runs them all at once on two cores.
func TestMigrateCSO(t *testing.T) {
	t.Parallel()
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	f := startOLMFixture(ctx, t)
	drivers := olmEraDrivers()
	installOLMEraDrivers(ctx, t, f, drivers...)
	c := f.stack.Client

	before := snapshot(ctx, t, c)
	var out bytes.Buffer
	must(t, migrateCSO(ctx, f.stack, "ebs", true, &out))
	for _, want := range []string{
		"Deployment openshift-aws-ebs-csi-driver/aws-ebs-csi-driver-controller",
		"not adopted: the CSO-era operator runs its own in namespace openshift-cluster-csi-drivers",
		"CSIDriver ebs.csi.aws.com",
		"Action required for EBS",
		"kubectl delete namespace openshift-aws-ebs-csi-driver",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the EBS plan lacks %q:\n%s", want, out.String())
		}
	}
	assertUnchanged(ctx, t, c, before)

	for _, d := range drivers {
		out.Reset()
		if err := migrateCSO(ctx, f.stack, d.name, false, &out); err != nil {
			t.Fatalf("migrating %s: %v\n%s", d.name, err, out.String())
		}
		t.Log(out.String())
		d.assertHandedOver(ctx, t, c)
		if d.name == "manila" && strings.Contains(out.String(), "not adopted") {
			t.Errorf("Manila's operands live where the CSO-era operator adopts them:\n%s", out.String())
		}
	}
}

// runKilled runs a migrate verb that kills itself after a step, and checks it died that way.
func runKilled(t *testing.T, bin string, s *testbed.Stack, step string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--kubeconfig", s.Kubeconfig, "--confirm")...)
	cmd.Env = append(os.Environ(), "CSI_OLM_MIGRATE_KILL_AFTER="+step)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the verb was not killed after step %s: %v\n%s", step, err, out)
	}
}

func run(t *testing.T, bin string, s *testbed.Stack, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append(args, "--kubeconfig", s.Kubeconfig, "--confirm")...).CombinedOutput()
	if err != nil {
		t.Fatalf("the rerun failed: %v\n%s", err, out)
	}
	return string(out)
}

// TestMigrateResumesAfterKill kills each verb right after each step took effect, before the
// journal records it, and checks that running the verb again reaches the same end state.
func TestMigrateResumesAfterKill(t *testing.T) {
	t.Parallel()
	bin := testutil.BuildBinary(t, "github.com/csi-olm/csi-olm/cmd/csi-olm", "csiolm_killhook")
	subscriptionArgs := []string{"migrate", "subscription", "--source", certifiedSource, "--source-namespace", testbed.OLMNamespace, "--timeout", "2m"}
	for _, step := range []string{"record", "switch-source", "follow-upgrade", "verify-driver"} {
		t.Run("subscription/"+step, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := progress.WithStall(context.Background(), flowStall)
			defer cancel()
			e := installCommunityEFS(ctx, t, startOLMFixture(ctx, t))
			runKilled(t, bin, e.stack, step, subscriptionArgs...)
			out := run(t, bin, e.stack, subscriptionArgs...)
			if !strings.Contains(out, "resuming the migration recorded in ConfigMap openshift-operators/csi-olm-migrate-subscription-aws-efs-operator") {
				t.Errorf("the rerun did not resume:\n%s", out)
			}
			e.assertSwitched(ctx, t)
		})
	}
	csoArgs := []string{"migrate", "cso", "--driver", "manila", "--timeout", "2m"}
	for _, step := range []string{"record", "delete-subscription", "delete-csv", "wait-operator-removed", "release-old-cr", "create-clustercsidriver", "check-operands"} {
		t.Run("cso/"+step, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := progress.WithStall(context.Background(), flowStall)
			defer cancel()
			f := startOLMFixture(ctx, t)
			manila := olmEraDrivers()[1]
			installOLMEraDrivers(ctx, t, f, manila)
			runKilled(t, bin, f.stack, step, csoArgs...)
			out := run(t, bin, f.stack, csoArgs...)
			if !strings.Contains(out, "resuming the migration recorded in ConfigMap openshift-operators/csi-olm-migrate-cso-manila") {
				t.Errorf("the rerun did not resume:\n%s", out)
			}
			manila.assertHandedOver(ctx, t, f.stack.Client)
		})
	}
}

// state is what a refused migration must leave as it was.
type state map[string]string

func snapshot(ctx context.Context, t testing.TB, c client.Client) state {
	t.Helper()
	s := state{}
	var subs operatorsv1alpha1.SubscriptionList
	must(t, c.List(ctx, &subs))
	for _, sub := range subs.Items {
		s["Subscription "+sub.Namespace+"/"+sub.Name] = fmt.Sprintf("uid=%s generation=%d spec=%+v", sub.UID, sub.Generation, *sub.Spec)
	}
	var csvs operatorsv1alpha1.ClusterServiceVersionList
	must(t, c.List(ctx, &csvs, client.InNamespace(testbed.OperatorsNamespace)))
	for _, csv := range csvs.Items {
		s["CSV "+csv.Name] = string(csv.UID)
	}
	var cms corev1.ConfigMapList
	must(t, c.List(ctx, &cms, client.HasLabels{"migrate.csi-olm.io/verb"}))
	for _, cm := range cms.Items {
		s["journal "+cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	var ccds operatorv1.ClusterCSIDriverList
	must(t, c.List(ctx, &ccds))
	for _, ccd := range ccds.Items {
		s["ClusterCSIDriver "+ccd.Name] = string(ccd.UID)
	}
	for _, d := range olmEraDrivers() {
		cr := d.cr
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err == nil {
			s[d.name+" CR"] = fmt.Sprintf("uid=%s finalizers=%v deleting=%v", cr.GetUID(), cr.GetFinalizers(), cr.GetDeletionTimestamp() != nil)
		}
	}
	return s
}

// assertUnchanged checks the cluster is in the state before, but for the keys of state named in
// changing.
func assertUnchanged(ctx context.Context, t testing.TB, c client.Client, before state, changing ...string) {
	t.Helper()
	after := snapshot(ctx, t, c)
	for _, k := range changing {
		delete(before, k)
		delete(after, k)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed:\n  before: %s\n  after:  %s", k, v, after[k])
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s appeared: %s", k, v)
		}
	}
}
