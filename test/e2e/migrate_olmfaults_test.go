package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/migrate/subscription"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// onProgress is the verb's output writer that runs act once, the first time the output
// contains when: a deterministic point in the verb's run at which a test injects a fault or an
// edit, since the verb prints each step before running it.
type onProgress struct {
	bytes.Buffer
	when  string
	act   func()
	fired bool
}

func (w *onProgress) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if !w.fired && w.act != nil && strings.Contains(w.String(), w.when) {
		w.fired = true
		w.act()
	}
	return n, err
}

// The progress lines the verb prints before each step.
const (
	beforeSwitch = "[1/3] switch Subscription"
	beforeFollow = "[2/3] wait for OLM"
)

// TestMigrateSubscriptionOLMFaults makes OLM fail the upgrade for real, in each way the verb
// must recognise, and checks the verb names the fault, keeps its journal with the failed step,
// prints a restore command that puts the Subscription back exactly, and that the community
// driver kept running throughout. Each fault gets its own test bed: OLM's reaction to one (a
// Pending CSV, a failed InstallPlan) would outlive the restore and disturb the next.
func TestMigrateSubscriptionOLMFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// source names the CatalogSource that serves the variant catalog.
		source  string
		variant catalogVariant
		// timeout bounds the verb's follow-upgrade step.
		timeout time.Duration
		// when and fault inject the fault at a point of the verb's run; the catalog is served
		// at addr as CatalogSource olm/<source>.
		when  string
		fault func(ctx context.Context, t *testing.T, e *communityEFS, source, addr string)
		want  []string
		// headCSV is the phase OLM leaves the head CSV in, none when it creates none.
		headCSV operatorsv1alpha1.ClusterServiceVersionPhase
		// fix, when set, mends the fault, and the verb run again must finish the migration, as
		// its error says; otherwise the printed restore command is checked instead.
		fix func(ctx context.Context, t *testing.T, e *communityEFS)
	}{{
		name: "registry unavailable", source: "certified-flaky", variant: unchanged, timeout: 15 * time.Second,
		when: beforeSwitch, fault: registryGoesAway,
		want: []string{
			"step follow-upgrade: gave up waiting for the upgrade to " + certifiedHeadCSV + " after 15s: the registry of catalog openshift-marketplace/certified-flaky is unreachable: connection state ",
			"unless OLM still holds a copy of the catalog, it cannot resolve until the registry answers",
		},
	}, {
		// OLM retries a failing InstallPlan for a minute (its --install-plan-retry-timeout)
		// before it fails it; the verb must end then, long before its own timeout.
		name: "InstallPlan fails", source: "certified-invalid-sharedvolume", variant: unchanged, timeout: 4 * time.Minute,
		when: beforeSwitch, fault: invalidSharedVolumeAfterTheCheck,
		want: []string{
			"step follow-upgrade: InstallPlan openshift-operators/install-",
			"which installs " + certifiedHeadCSV + ", failed, and OLM does not retry a failed InstallPlan: Installed=False reason=InstallComponentFailed: ",
			`error validating existing CRs against new CRD's schema for "sharedvolumes.aws-efs.managed.openshift.io"`,
			`SharedVolume "app-1/created-after-the-check": updated validation is too restrictive: [].spec.accessPointID: Too long`,
		},
		// The CSV is created by the time the CRD step fails, and waits for what never comes.
		headCSV: operatorsv1alpha1.CSVPhasePending,
		fix:     deleteInvalidSharedVolume,
	}, {
		name: "CSV stuck Pending", source: "certified-needs-unserved-api", variant: headNeedsUnservedAPI, timeout: 10 * time.Second,
		when: beforeFollow, fault: csvPending,
		want: []string{
			"step follow-upgrade: gave up waiting for the upgrade to " + certifiedHeadCSV + " after 10s: CSV " + certifiedHeadCSV + " is Pending: RequirementsNotMet: one or more requirements couldn't be found",
			"not met: NeverServed v1.faults.csi-olm.io is NotPresent (Native API does not exist)",
		},
		headCSV: operatorsv1alpha1.CSVPhasePending,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := progress.WithStall(context.Background(), flowStall)
			defer cancel()
			e := installCommunityEFS(ctx, t, startOLMFixture(ctx, t))
			s, c := e.stack, e.stack.Client
			addr := serveCatalogVariant(ctx, t, s, tc.source, tc.variant)
			var original operatorsv1alpha1.Subscription
			must(t, c.Get(ctx, client.ObjectKey{Namespace: testbed.OperatorsNamespace, Name: efsPackage}, &original))

			out := &onProgress{when: tc.when}
			if tc.fault != nil {
				out.act = func() { tc.fault(ctx, t, e, tc.source, addr) }
			}
			opts := options(s, false, &out.Buffer)
			opts.Out, opts.Progress, opts.Timeout = out, out, tc.timeout
			begin := time.Now()
			err := (&subscription.Migrate{Options: opts, Source: tc.source, SourceNamespace: testbed.OLMNamespace}).Run(ctx)
			took := time.Since(begin)
			if err == nil {
				t.Fatalf("the migration succeeded despite the fault:\n%s", out.String())
			}
			t.Logf("after %s the verb said:\n%v", took.Round(time.Second), err)
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error lacks %q", want)
				}
			}
			if tc.fault != nil && !out.fired {
				t.Errorf("the fault was never injected: the verb never printed %q", tc.when)
			}
			assertFailureRecorded(ctx, t, c, "switch-source", "follow-upgrade")

			var csv operatorsv1alpha1.ClusterServiceVersion
			if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.OperatorsNamespace, Name: certifiedHeadCSV}, &csv); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
			if csv.Status.Phase != tc.headCSV {
				t.Errorf("CSV %s is %q (%s: %s), want %q", certifiedHeadCSV, csv.Status.Phase, csv.Status.Reason, csv.Status.Message, tc.headCSV)
			}
			if tc.fix == nil {
				restoreFromError(ctx, t, c, err, &original)
				e.assertDriverKeptRunning(ctx, t)
				return
			}
			e.assertDriverKeptRunning(ctx, t)
			if !strings.Contains(err.Error(), "Fix what OLM names, then run the same command again") {
				t.Errorf("the error does not say to run the verb again once the fault is fixed")
			}
			tc.fix(ctx, t, e)
			var again bytes.Buffer
			opts = options(s, false, &again)
			opts.Timeout = 4 * time.Minute
			if err := (&subscription.Migrate{Options: opts, Source: tc.source, SourceNamespace: testbed.OLMNamespace}).Run(ctx); err != nil {
				t.Fatalf("the run after the fix failed: %v\n%s", err, again.String())
			}
			t.Logf("the run after the fix said:\n%s", again.String())
			for _, want := range []string{"failed before", "csi-olm clears it so that OLM tries the upgrade again", "deleting CSV " + certifiedHeadCSV} {
				if !strings.Contains(again.String(), want) {
					t.Errorf("the run after the fix does not say %q", want)
				}
			}
			var sub operatorsv1alpha1.Subscription
			must(t, c.Get(ctx, client.ObjectKeyFromObject(&original), &sub))
			if !olm.AtLatestKnown(certifiedHeadCSV)(&sub) {
				t.Errorf("Subscription is not AtLatestKnown %s:\n%s", certifiedHeadCSV, olm.DescribeSubscription(&sub, nil))
			}
			e.assertDriverKeptRunning(ctx, t)
		})
	}
}

// registryGoesAway takes the catalog's registry away before the verb switches the Subscription.
// OLM resolves from a copy of each catalog it keeps for 30 minutes, and drops a copy only when
// its connection to the registry becomes READY again: a registry that merely dies is invisible
// to OLM until then. So the registry dies (SIGKILL); a server that speaks gRPC but serves no
// catalog, as a registry pod that restarts and crashes does, takes its port until OLM
// reconnected and dropped its copy; then it goes too, and OLM finds nothing to resolve from.
func registryGoesAway(ctx context.Context, t *testing.T, e *communityEFS, source, addr string) {
	s := e.stack
	for _, p := range s.Processes() {
		if p.Name == "opm-"+source {
			must(t, syscall.Kill(-p.PID, syscall.SIGKILL))
		}
	}
	must(t, testutil.Eventually(ctx, "the registry's port to refuse connections", func(context.Context) error {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return errors.New("still accepting")
		}
		return nil
	}))
	waitConnection(ctx, t, s, source, false)
	lis, err := net.Listen("tcp", addr)
	must(t, err)
	srv := grpc.NewServer()
	serving := health.NewServer()
	serving.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, serving)
	go func() { _ = srv.Serve(lis) }()
	waitConnection(ctx, t, s, source, true)
	srv.Stop()
	waitConnection(ctx, t, s, source, false)
}

// waitConnection waits until OLM reports the CatalogSource's registry connection READY, or not.
func waitConnection(ctx context.Context, t *testing.T, s *testbed.Stack, source string, ready bool) {
	must(t, testutil.Eventually(ctx, fmt.Sprintf("CatalogSource %s READY=%v", source, ready), func(ctx context.Context) error {
		var cs operatorsv1alpha1.CatalogSource
		if err := s.Client.Get(ctx, client.ObjectKey{Namespace: testbed.OLMNamespace, Name: source}, &cs); err != nil {
			return err
		}
		st := cs.Status.GRPCConnectionState
		if st != nil && (st.LastObservedState == "READY") == ready {
			return nil
		}
		return fmt.Errorf("connection state %+v", st)
	}))
}

// invalidSharedVolumeAfterTheCheck creates, once the plan has found every SharedVolume valid
// under the certified CRD, one the community CRD takes and the certified one refuses (an access
// point ID over 64 characters), as an app team might in between: OLM's own check then fails the
// InstallPlan that replaces the CRD.
func invalidSharedVolumeAfterTheCheck(ctx context.Context, t *testing.T, e *communityEFS, _, _ string) {
	sv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "aws-efs.managed.openshift.io/v1alpha1", "kind": "SharedVolume",
		"metadata": map[string]any{"namespace": "app-1", "name": "created-after-the-check"},
		"spec":     map[string]any{"fileSystemID": "fs-0123abcd", "accessPointID": "fsap-" + strings.Repeat("0123456789abcdef", 4)},
	}}
	must(t, e.stack.Client.Create(ctx, sv))
}

// deleteInvalidSharedVolume is the fix of invalidSharedVolumeAfterTheCheck: the app team
// deletes the SharedVolume and would create it again valid.
func deleteInvalidSharedVolume(ctx context.Context, t *testing.T, e *communityEFS) {
	sv := &unstructured.Unstructured{}
	sv.SetAPIVersion("aws-efs.managed.openshift.io/v1alpha1")
	sv.SetKind("SharedVolume")
	sv.SetNamespace("app-1")
	sv.SetName("created-after-the-check")
	must(t, e.stack.Client.Delete(ctx, sv))
}

// csvPending waits, before the verb follows the upgrade, until OLM has installed the head CSV
// and found its requirements unmet, so that the verb's short timeout runs against a Pending CSV.
func csvPending(ctx context.Context, t *testing.T, e *communityEFS, _, _ string) {
	must(t, testutil.Eventually(ctx, "CSV "+certifiedHeadCSV+" Pending with its requirements", func(ctx context.Context) error {
		var csv operatorsv1alpha1.ClusterServiceVersion
		if err := e.stack.Client.Get(ctx, client.ObjectKey{Namespace: testbed.OperatorsNamespace, Name: certifiedHeadCSV}, &csv); err != nil {
			return err
		}
		if csv.Status.Phase != operatorsv1alpha1.CSVPhasePending || csv.Status.Reason != operatorsv1alpha1.CSVReasonRequirementsNotMet || len(csv.Status.RequirementStatus) == 0 {
			return fmt.Errorf("phase %s reason %s", csv.Status.Phase, csv.Status.Reason)
		}
		return nil
	}))
}

// assertFailureRecorded checks the journal is kept, with the steps done and the failed one.
func assertFailureRecorded(ctx context.Context, t *testing.T, c client.Client, done, failed string) {
	t.Helper()
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.OperatorsNamespace, Name: "csi-olm-migrate-subscription-" + efsPackage}, &cm); err != nil {
		t.Errorf("the journal is gone: %v", err)
		return
	}
	if cm.Data["completed"] != done || !strings.HasPrefix(cm.Data["failed"], failed+": ") || cm.Data["phase"] != "InProgress" ||
		!strings.Contains(cm.Data["log"], "failed: "+failed+": ") {
		t.Errorf("the journal does not record step %s done and step %s failed: %v", done, failed, cm.Data)
	}
}

// restoreFromError applies the restore command a failed run printed, and checks it puts the
// Subscription's spec back exactly as it was.
func restoreFromError(ctx context.Context, t *testing.T, c client.Client, runErr error, original *operatorsv1alpha1.Subscription) {
	t.Helper()
	const restore = `kubectl patch subscriptions.operators.coreos.com -n openshift-operators aws-efs-operator --type=merge -p '`
	msg := runErr.Error()
	i := strings.Index(msg, restore)
	if i < 0 {
		t.Errorf("the error does not say how to restore the Subscription:\n%v", runErr)
		return
	}
	patch, _, _ := strings.Cut(msg[i+len(restore):], "'")
	var sub operatorsv1alpha1.Subscription
	must(t, c.Get(ctx, client.ObjectKeyFromObject(original), &sub))
	if sub.Spec.CatalogSource == original.Spec.CatalogSource {
		t.Errorf("the failed run did not switch the source first: %+v", sub.Spec)
	}
	must(t, c.Patch(ctx, &sub, client.RawPatch(types.MergePatchType, []byte(patch))))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(original), &sub))
	if !equality.Semantic.DeepEqual(sub.Spec, original.Spec) {
		t.Errorf("the printed patch %s did not restore the spec: %+v, was %+v", patch, sub.Spec, original.Spec)
	}
}

// assertDriverKeptRunning checks the community driver DaemonSet is the same object, not being
// deleted, and that every volume kept its binding.
func (e *communityEFS) assertDriverKeptRunning(ctx context.Context, t *testing.T) {
	t.Helper()
	var ds appsv1.DaemonSet
	err := e.stack.Client.Get(ctx, client.ObjectKeyFromObject(e.driver), &ds)
	switch {
	case apierrors.IsNotFound(err):
		t.Error("the community driver DaemonSet was deleted")
	case err != nil:
		t.Error(err)
	case ds.UID != e.driver.UID || ds.DeletionTimestamp != nil:
		t.Error("the community driver DaemonSet was re-created or is being deleted")
	}
	e.assertVolumesUntouched(ctx, t)
}
