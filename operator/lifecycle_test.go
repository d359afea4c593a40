package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/metrics/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/controller"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// newManaged starts a stack with the operator and a Managed CR, and waits for the driver's
// objects.
func newManaged(t *testing.T, level testbed.Level) (*harness, context.Context) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, level, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	h.runOperator()
	// The tests that start here wait on many steps in turn: a stall window, not a deadline for
	// them all, which a clean clone's busy machine outlasted
	// (TestRemovalFenceRefusesNewUsesOnlyWhileRemoving).
	ctx, cancel := progress.WithStall(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	for _, obj := range manualModeOperands() { // no CredentialsRequest in Manual mode
		must(t, eventually(ctx, "operand "+obj.GetName(), h.exists(obj)))
	}
	return h, ctx
}

func TestNoCRDeploysNothingAndAlerts(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{})
	h.runOperator()
	ctx, cancel := progress.WithStall(context.Background(), time.Minute)
	defer cancel()

	rule := unstructuredOf(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}, ns, "aws-efs-csi-driver-operator")
	must(t, eventually(ctx, "the PrometheusRule", h.exists(rule)))
	if !strings.Contains(fmt.Sprint(rule.Object["spec"]), "AWSEFSDriverNotEnabled") {
		t.Errorf("the PrometheusRule lacks the alert: %v", rule.Object["spec"])
	}
	must(t, eventually(ctx, "the ClusterCSIDriverMissing event", func(ctx context.Context) error {
		var events corev1.EventList
		if err := h.c.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == "ClusterCSIDriverMissing" && strings.Contains(e.Message, "create it with managementState Managed") {
				return nil
			}
		}
		return fmt.Errorf("%d events, none ClusterCSIDriverMissing", len(events.Items))
	}))
	if v, err := testutil.GetGaugeMetricValue(operator.CRPresent); err != nil || v != 0 {
		t.Errorf("metric %v, %v: want 0 without the CR", v, err)
	}
	// The event above says the operator has processed the missing CR; nothing of the driver
	// exists then, and the operator deletes nothing without a CR, so nothing was created
	// before the CR below.
	for _, obj := range operands() {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s exists without the CR (err %v)", obj, obj.GetName(), err)
		}
	}

	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	must(t, eventually(ctx, "the metric to turn 1", func(context.Context) error {
		if v, _ := testutil.GetGaugeMetricValue(operator.CRPresent); v != 1 {
			return fmt.Errorf("metric is %v", v)
		}
		return nil
	}))
}

func TestManagedStompsEditsUnmanagedKeepsThem(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}}
	edit := func() {
		t.Helper()
		must(t, h.c.Get(ctx, client.ObjectKeyFromObject(ds), ds))
		ds.Spec.Template.Spec.Containers[0].Image = "quay.io/someone/else:latest"
		must(t, h.c.Update(ctx, ds))
	}
	driverImage := func(ctx context.Context) (string, error) {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			return "", err
		}
		return ds.Spec.Template.Spec.Containers[0].Image, nil
	}

	edit()
	must(t, eventually(ctx, "the edit to be stomped", func(ctx context.Context) error {
		if img, err := driverImage(ctx); err != nil || img != fixture.Images[efs.DriverImageEnv] {
			return fmt.Errorf("image %q, %v", img, err)
		}
		return nil
	}))

	h.setState(ctx, operatorv1.Unmanaged)
	must(t, eventually(ctx, "the operator to take in Unmanaged", h.observed(efs.CRName)))
	edit()
	// A CR change made after the edit, taken in by the operator: every controller has been
	// woken up by the CR after the edit and found the operand Unmanaged.
	cr, err := h.cr(ctx)
	must(t, err)
	patch := client.MergeFrom(cr.DeepCopy())
	cr.Spec.OperatorLogLevel = operatorv1.Debug
	must(t, h.c.Patch(ctx, cr, patch))
	must(t, eventually(ctx, "the operator to take in the change", h.observed(efs.CRName)))
	if img, err := driverImage(ctx); err != nil || img != "quay.io/someone/else:latest" {
		t.Errorf("Unmanaged: the user's edit was changed to %q (%v)", img, err)
	}

	h.setState(ctx, operatorv1.Managed)
	must(t, eventually(ctx, "Managed again to stomp the edit", func(ctx context.Context) error {
		if img, err := driverImage(ctx); err != nil || img != fixture.Images[efs.DriverImageEnv] {
			return fmt.Errorf("image %q, %v", img, err)
		}
		return nil
	}))
}

func TestRemovedRemovesTheDriver(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	h.setState(ctx, operatorv1.Removed)
	for _, obj := range operands() {
		must(t, eventually(ctx, "removal of "+obj.GetName(), h.gone(obj)))
	}
	// The conditions follow the removal a moment later: Progressing is False (Installed) before
	// it and True while it runs, so wait for the reason that says it is done.
	must(t, eventually(ctx, "the Removed condition", h.conditionWith("AWSEFSDriverUninstallProgressing", operatorv1.ConditionFalse, "DriverRemoved")))
	// Managed again brings the driver back.
	h.setState(ctx, operatorv1.Managed)
	must(t, eventually(ctx, "the driver back", h.exists(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}})))
}

// holdDeployment puts a finalizer of the test's own on the controller Deployment, so that a
// removal stays under way until release is called.
func (h *harness) holdDeployment(ctx context.Context, t *testing.T) (release func()) {
	t.Helper()
	const holdFinalizer = "test.csi-olm.io/hold"
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}}
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(deployment), deployment))
	patch := client.MergeFrom(deployment.DeepCopy())
	deployment.Finalizers = append(deployment.Finalizers, holdFinalizer)
	must(t, h.c.Patch(ctx, deployment, patch))
	release = func() {
		var d appsv1.Deployment
		if h.c.Get(context.Background(), client.ObjectKeyFromObject(deployment), &d) == nil {
			p := client.MergeFrom(d.DeepCopy())
			d.Finalizers = slices.DeleteFunc(d.Finalizers, func(f string) bool { return f == holdFinalizer })
			_ = h.c.Patch(context.Background(), &d, p)
		}
	}
	t.Cleanup(release)
	return release
}

// volumeInUse creates namespace app (once), an EFS PersistentVolume pre-bound to claim name there,
// and a pod that uses the claim.
func (h *harness) volumeInUse(ctx context.Context, t *testing.T, name string) (*corev1.PersistentVolume, *corev1.Pod) {
	t.Helper()
	if err := h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pv, pod := fixture.ClaimedEFSPV(name, "app", name), fixture.PodUsing("app", name+"-user", name)
	must(t, h.c.Create(ctx, pv))
	must(t, h.c.Create(ctx, pod))
	return pv, pod
}

// TestRemovalFenceRefusesNewUsesOnlyWhileRemoving: while pods hold a removal back, EFS volumes are
// provisioned as ever (an accidental Removed must not stop every team's provisioning). For the
// seconds of the removal itself, the API server refuses new EFS PersistentVolumes and new pods on
// claims bound to EFS volumes, with a message that says why and what to do; other pods and other
// drivers' volumes are admitted, and Managed admits everything again. The property test
// TestDriverNeverDeletedUnderAVolume found the driver deleted under a volume put to use in the
// milliseconds between the operator's last look and its delete.
func TestRemovalFenceRefusesNewUsesOnlyWhileRemoving(t *testing.T) {
	// The full stack: the controller-manager releases the pv-protection finalizer of deleted
	// volumes.
	h, ctx := newManaged(t, testbed.Full)
	refusedWith := func(obj client.Object, want string) func(context.Context) error {
		return func(ctx context.Context) error {
			err := h.c.Create(ctx, obj.DeepCopyObject().(client.Object))
			if err == nil {
				_ = h.c.Delete(ctx, obj, client.GracePeriodSeconds(0))
				return fmt.Errorf("%T %s admitted", obj, obj.GetName())
			}
			if !operator.RefusedByRemovalFence(err) || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("%T %s refused with %v, want the removal fence's refusal saying %q", obj, obj.GetName(), err, want)
			}
			return nil
		}
	}
	_, user := h.volumeInUse(ctx, t, "blocking")

	// Blocked by a pod, Removed admits new EFS volumes: a SharedVolume gets Ready.
	h.setState(ctx, operatorv1.Removed)
	must(t, eventually(ctx, "the uninstall blocked", h.conditionWith("AWSEFSDriverUninstallDegraded", operatorv1.ConditionTrue, "VolumesInUse")))
	must(t, h.c.Create(ctx, fixture.EFSPV("while-in-use")))
	svCRD, err := testbed.DecodeCRD(crd.SharedVolumes)
	must(t, err)
	must(t, testbed.InstallCRDs(ctx, h.c, svCRD))
	svReady := func(sv *sharedvolumev1alpha1.SharedVolume, phase sharedvolumev1alpha1.SharedVolumePhase, reason, says string) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := h.c.Get(ctx, client.ObjectKeyFromObject(sv), sv); err != nil {
				return err
			}
			c := meta.FindStatusCondition(sv.Status.Conditions, controller.ConditionReady)
			if sv.Status.Phase != phase || c == nil || c.Reason != reason || !strings.Contains(c.Message, says) {
				return fmt.Errorf("phase %q, Ready %+v", sv.Status.Phase, c)
			}
			return nil
		}
	}
	newSV := func(name, accessPoint string) *sharedvolumev1alpha1.SharedVolume {
		sv := &sharedvolumev1alpha1.SharedVolume{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name},
			Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123abcd", AccessPointID: accessPoint},
		}
		must(t, h.c.Create(ctx, sv))
		return sv
	}
	early := newSV("early", "fsap-0e")
	must(t, eventually(ctx, "a SharedVolume Ready while pods hold the removal back", svReady(early, sharedvolumev1alpha1.SharedVolumeReady, controller.ReasonBound, "")))

	// The pod stops; the removal runs, held at the controller Deployment.
	release := h.holdDeployment(ctx, t)
	must(t, deletePodNow(ctx, h.c, user.Namespace, user.Name))
	must(t, eventually(ctx, "the removal under way", h.conditionWith("AWSEFSDriverUninstallProgressing", operatorv1.ConditionTrue, "RemovingDriver")))
	must(t, eventually(ctx, "a new EFS PV refused during the removal", refusedWith(fixture.EFSPV("while-removing"), "set its managementState to Managed")))
	must(t, eventually(ctx, "a pod on an EFS claim refused during the removal", refusedWith(fixture.PodUsing("app", "late-user", "blocking"), "no new pod may use an EFS volume")))
	must(t, h.c.Create(ctx, fixture.PodUsing("app", "other-user", "not-efs")))
	other := fixture.EFSPV("other-driver")
	other.Spec.CSI.Driver = "ebs.csi.aws.com"
	must(t, h.c.Create(ctx, other))
	// A SharedVolume waits, and says why.
	late := newSV("late", "fsap-1a")
	must(t, eventually(ctx, "the SharedVolume refused", svReady(late, sharedvolumev1alpha1.SharedVolumePending, controller.ReasonVolumeRefused, efs.RemovalFence)))

	// Managed admits them again.
	h.setState(ctx, operatorv1.Managed)
	must(t, eventually(ctx, "a new EFS PV admitted under Managed", func(ctx context.Context) error {
		return h.c.Create(ctx, fixture.EFSPV("managed-again"))
	}))
	must(t, eventually(ctx, "the SharedVolume Ready", svReady(late, sharedvolumev1alpha1.SharedVolumeReady, controller.ReasonBound, "")))
	must(t, eventually(ctx, "the fence's parameters gone under Managed", h.fencesGone))
	release()

	// A deleted CR refuses them during its removal, and says a deletion cannot be undone; once
	// it is gone there is nothing to refuse on.
	must(t, eventually(ctx, "the driver back", h.exists(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}})))
	release = h.holdDeployment(ctx, t)
	cr, err := h.cr(ctx)
	must(t, err)
	must(t, h.c.Delete(ctx, cr))
	must(t, eventually(ctx, "a new EFS PV refused while the CR is deleted", refusedWith(fixture.EFSPV("while-deleted"), "a deletion cannot be undone")))
	release()
	must(t, eventually(ctx, "the CR gone, with volumes left that no pod uses", h.gone(cr)))
	must(t, eventually(ctx, "a new EFS PV admitted once the CR is gone", func(ctx context.Context) error {
		return h.c.Create(ctx, fixture.EFSPV("after-the-cr"))
	}))
}

// TestAVolumeUsedDuringRemovalStopsIt: a pod that gets onto an EFS volume while the driver is
// being removed stops the removal and brings the driver back. The fence keeps such pods out, so
// the test takes it down as an admin could; a finalizer of the test's own holds the controller
// Deployment in deletion, so the removal is still under way when the pod comes. Once the pod is
// gone, the next removal puts the fence back up. The property test
// TestDriverNeverDeletedUnderAVolume found the operator checking only before the first round of
// a removal.
func TestAVolumeUsedDuringRemovalStopsIt(t *testing.T) {
	h, ctx := newManaged(t, testbed.Full)
	release := h.holdDeployment(ctx, t)
	must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}))
	must(t, h.c.Create(ctx, fixture.ClaimedEFSPV("pv-during-removal", "app", "data")))

	h.setState(ctx, operatorv1.Removed)
	node := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}}
	must(t, eventually(ctx, "the removal to begin, the volume no pod uses notwithstanding", h.gone(node)))
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: efs.RemovalFence}}
	must(t, h.c.Delete(ctx, binding))
	pod := fixture.PodUsing("app", "late", "data")
	must(t, eventually(ctx, "a pod admitted without the fence", func(ctx context.Context) error { return h.c.Create(ctx, pod) }))

	must(t, eventually(ctx, "the node DaemonSet back", h.exists(node)))
	must(t, eventually(ctx, "the removal reported stopped", func(ctx context.Context) error {
		cr, err := h.cr(ctx)
		if err != nil {
			return err
		}
		for _, c := range cr.Status.Conditions {
			if c.Type == "AWSEFSDriverUninstallDegraded" && c.Reason == "VolumesInUse" && strings.Contains(c.Message, "removal stopped and the driver restored") &&
				strings.Contains(c.Message, "pod app/late uses claim data of PersistentVolume pv-during-removal") {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", cr.Status.Conditions)
	}))

	must(t, deletePodNow(ctx, h.c, pod.Namespace, pod.Name))
	release()
	must(t, eventually(ctx, "the fence back up", h.exists(binding)))
	for _, obj := range operands() {
		must(t, eventually(ctx, "removal of "+obj.GetName(), h.gone(obj)))
	}
}

// TestUninstallWaitsForVolumesInUse runs on the full stack: the controller-manager releases the
// pv-protection finalizer of deleted volumes. Volumes no pod uses do not hold the uninstall back;
// the pods that use volumes do, and the condition and an event name them.
func TestUninstallWaitsForVolumesInUse(t *testing.T) {
	h, ctx := newManaged(t, testbed.Full)
	var pods []*corev1.Pod
	for i := range 12 {
		_, pod := h.volumeInUse(ctx, t, fmt.Sprintf("pv-app-%02d", i))
		pods = append(pods, pod)
	}
	idle := fixture.ClaimedEFSPV("pv-idle", "app", "idle")
	must(t, h.c.Create(ctx, idle))
	must(t, h.c.Create(ctx, fixture.EFSPV("pv-unbound")))
	cr, err := h.cr(ctx)
	must(t, err)
	must(t, h.c.Delete(ctx, cr))

	must(t, eventually(ctx, "the uninstall to be blocked", h.conditionIs("AWSEFSDriverUninstallDegraded", operatorv1.ConditionTrue)))
	cr, err = h.cr(ctx)
	must(t, err)
	for _, c := range cr.Status.Conditions {
		if c.Type != "AWSEFSDriverUninstallDegraded" {
			continue
		}
		if c.Reason != "VolumesInUse" {
			t.Errorf("reason %s, want VolumesInUse", c.Reason)
		}
		for _, want := range []string{"12 pods use EFS volumes", "pod app/pv-app-00-user uses claim pv-app-00 of PersistentVolume pv-app-00", "pv-app-09", "and 2 more", "stop them",
			"create the ClusterCSIDriver again afterwards"} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("message %q lacks %q", c.Message, want)
			}
		}
		for _, unwanted := range []string{"pv-app-10", "pv-idle", "pv-unbound"} {
			if strings.Contains(c.Message, unwanted) {
				t.Errorf("message names %s: %q", unwanted, c.Message)
			}
		}
	}
	// Blocked: the driver keeps running, reconciled as if Managed. The operator has taken in the
	// deletion (observedGeneration) and said why it waits (the event) before the check.
	must(t, eventually(ctx, "the operator to take in the deletion", h.observed(efs.CRName)))
	must(t, eventually(ctx, "the VolumesInUse event", h.eventSeen("VolumesInUse")))
	for _, obj := range manualModeOperands() {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("%T %s is gone while pods use volumes: %v", obj, obj.GetName(), err)
		}
	}

	for _, pod := range pods {
		must(t, deletePodNow(ctx, h.c, pod.Namespace, pod.Name))
	}
	for _, obj := range operands() {
		must(t, eventually(ctx, "removal of "+obj.GetName(), h.gone(obj)))
	}
	must(t, eventually(ctx, "the CR to go", func(ctx context.Context) error {
		if _, err := h.cr(ctx); !apierrors.IsNotFound(err) {
			return fmt.Errorf("CR still there: %v", err)
		}
		return nil
	}))
	// The volumes stay: only their driver is gone.
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(idle), idle))
}

func TestOtherClusterCSIDriversAreIgnored(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{})
	h.runOperator()
	ctx, cancel := progress.WithStall(context.Background(), time.Minute)
	defer cancel()
	h.createCR(ctx, "ebs.csi.aws.com", operatorv1.Managed)
	// Its own CR, created after the other one and Unmanaged so that it deploys nothing, proves
	// the operator has processed the CRs up to a point after the other one was created.
	h.createCR(ctx, efs.CRName, operatorv1.Unmanaged)
	must(t, eventually(ctx, "the operator to take in its own CR", h.observed(efs.CRName)))
	var other operatorv1.ClusterCSIDriver
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "ebs.csi.aws.com"}, &other))
	if len(other.Finalizers) > 0 || len(other.Status.Conditions) > 0 {
		t.Errorf("the operator touched another driver's CR: finalizers %v, %d conditions", other.Finalizers, len(other.Status.Conditions))
	}
	if err := h.c.Get(ctx, client.ObjectKey{Name: "efs.csi.aws.com"}, &storagev1.CSIDriver{}); !apierrors.IsNotFound(err) {
		t.Errorf("the driver was installed for another CR: %v", err)
	}
}

func TestInvalidLogLevelIsRejectedWithAClearMessage(t *testing.T) {
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{})
	ctx, cancel := progress.WithStall(context.Background(), time.Minute)
	defer cancel()
	cr := &operatorv1.ClusterCSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: efs.CRName},
		Spec: operatorv1.ClusterCSIDriverSpec{OperatorSpec: operatorv1.OperatorSpec{
			ManagementState: operatorv1.Managed, LogLevel: "Verbose",
		}},
	}
	err := h.c.Create(ctx, cr)
	if err == nil || !strings.Contains(err.Error(), "spec.logLevel") || !strings.Contains(err.Error(), `"Verbose"`) {
		t.Fatalf("err = %v, want the API server to reject spec.logLevel \"Verbose\"", err)
	}
}

// TestServiceMonitorFollowsTheOperatorsNamespace: the bundle's ServiceMonitor names the
// suggested namespace in its certificate's serverName (a bundle cannot template it). Created as
// OLM creates it in another namespace (a switched community install keeps its own), the operator
// running there points it at the certificate the service CA issues there, so that the cluster's
// Prometheus can scrape the operator, and its alert fire, wherever it runs.
func TestServiceMonitorFollowsTheOperatorsNamespace(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{})
	ctx, cancel := progress.WithStall(context.Background(), time.Minute)
	defer cancel()
	const elsewhere = "operators"
	must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}))
	monitor := &unstructured.Unstructured{}
	fixture.HeadManifest(t, efs.OperatorName+"_monitoring.coreos.com_v1_servicemonitor.yaml", &monitor.Object)
	want := "serverName:" + efs.OperatorMetricsService + "." + elsewhere + ".svc"
	if shipped := fmt.Sprint(monitor.Object["spec"]); strings.Contains(shipped, want) || !strings.Contains(shipped, "serverName:") {
		t.Fatalf("the bundle's ServiceMonitor %s: nothing to check", shipped)
	}
	monitor.SetNamespace(elsewhere)
	must(t, h.c.Create(ctx, monitor))
	fixture.RunOperator(t, h.stack.Config, elsewhere)
	must(t, eventually(ctx, "the ServiceMonitor pointed at "+elsewhere, func(ctx context.Context) error {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(monitor), monitor); err != nil {
			return err
		}
		if got := fmt.Sprint(monitor.Object["spec"]); !strings.Contains(got, want) {
			return fmt.Errorf("ServiceMonitor spec %s lacks %s", got, want)
		}
		return nil
	}))
}
