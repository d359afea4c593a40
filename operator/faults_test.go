package operator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// burstSize is how many SharedVolumes a burst puts in flight at once, as the issue that asked
// for the campaign requires.
const burstSize = 200

// burstNamespaces spreads a burst over this many namespaces, as many app teams would.
const burstNamespaces = 20

// burst names the SharedVolumes of a burst: burstSize of them over burstNamespaces namespaces,
// each with an access point of its own.
func burst(prefix string) []*sharedvolumev1alpha1.SharedVolume {
	svs := make([]*sharedvolumev1alpha1.SharedVolume, burstSize)
	for i := range svs {
		svs[i] = &sharedvolumev1alpha1.SharedVolume{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("%s-%02d", prefix, i%burstNamespaces), Name: fmt.Sprintf("data-%03d", i)},
			Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123abcd", AccessPointID: fmt.Sprintf("fsap-%08x", i)},
		}
	}
	return svs
}

// persist retries a write until it is done: the control plane may be down for a while, and an
// app team's tooling retries. A create that succeeded before its answer was lost finds the
// object there; a delete finds it gone.
func persist(ctx context.Context, write func(context.Context) error) error {
	for {
		err := write(ctx)
		if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// createBurst creates the namespaces and SharedVolumes of a burst on 16 goroutines, counting
// each SharedVolume created in done.
func createBurst(ctx context.Context, c client.Client, svs []*sharedvolumev1alpha1.SharedVolume, done *atomic.Int64) error {
	for i := range burstNamespaces {
		namespace := svs[i].Namespace
		if err := persist(ctx, func(ctx context.Context) error {
			return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
		}); err != nil {
			return err
		}
	}
	return testutil.Parallel(len(svs), func(i int) error {
		err := persist(ctx, func(ctx context.Context) error { return c.Create(ctx, svs[i].DeepCopy()) })
		done.Add(1)
		return err
	})
}

// deleteBurst deletes the SharedVolumes of a burst on 16 goroutines.
func deleteBurst(ctx context.Context, c client.Client, svs []*sharedvolumev1alpha1.SharedVolume) error {
	return testutil.Parallel(len(svs), func(i int) error {
		return persist(ctx, func(ctx context.Context) error { return c.Delete(ctx, svs[i].DeepCopy()) })
	})
}

// volumeAudit is what the campaign counts after each fault: the SharedVolumes, how many are
// Ready, and every way their volumes can go wrong.
type volumeAudit struct {
	sharedVolumes, ready int
	// bound counts the claims the PV binder has bound: Ready lags it by the controller's work.
	bound int
	// orphaned are PVs and PVCs labelled for a SharedVolume that does not exist; duplicated are
	// SharedVolumes with more than one PV or PVC; misbound are claims bound to, or volumes
	// claimed by, anything but their own pair; stuck are SharedVolumes still being deleted.
	orphaned, duplicated, misbound, stuck []string
}

func (a volumeAudit) problems() []string {
	var all []string
	for _, p := range []struct {
		what  string
		items []string
	}{{"orphaned", a.orphaned}, {"duplicated", a.duplicated}, {"misbound", a.misbound}, {"stuck deleting", a.stuck}} {
		if len(p.items) > 0 {
			all = append(all, fmt.Sprintf("%d %s: %v", len(p.items), p.what, p.items[:min(len(p.items), 5)]))
		}
	}
	return all
}

// auditVolumes reads every SharedVolume, PV and PVC of the cluster and checks that each
// SharedVolume has exactly one PV and one PVC, bound to each other, and nothing else exists.
func auditVolumes(ctx context.Context, c client.Client) (volumeAudit, error) {
	var a volumeAudit
	var svs sharedvolumev1alpha1.SharedVolumeList
	var pvs corev1.PersistentVolumeList
	var pvcs corev1.PersistentVolumeClaimList
	owned := client.HasLabels{efs.SharedVolumeOwnerNameLabel}
	for _, list := range []struct {
		l    client.ObjectList
		opts []client.ListOption
	}{{&svs, nil}, {&pvs, []client.ListOption{owned}}, {&pvcs, []client.ListOption{owned}}} {
		if err := c.List(ctx, list.l, list.opts...); err != nil {
			return a, err
		}
	}
	owner := func(o metav1.Object) string {
		return o.GetLabels()[efs.SharedVolumeOwnerNamespaceLabel] + "/" + o.GetLabels()[efs.SharedVolumeOwnerNameLabel]
	}
	pvOf, pvcOf := map[string][]corev1.PersistentVolume{}, map[string][]corev1.PersistentVolumeClaim{}
	for _, pv := range pvs.Items {
		pvOf[owner(&pv)] = append(pvOf[owner(&pv)], pv)
	}
	for _, pvc := range pvcs.Items {
		pvcOf[owner(&pvc)] = append(pvcOf[owner(&pvc)], pvc)
		if pvc.Status.Phase == corev1.ClaimBound {
			a.bound++
		}
	}
	exists := map[string]bool{}
	for _, sv := range svs.Items {
		key := sv.Namespace + "/" + sv.Name
		exists[key] = true
		a.sharedVolumes++
		if sv.Status.Phase == sharedvolumev1alpha1.SharedVolumeReady {
			a.ready++
		}
		if sv.DeletionTimestamp != nil {
			a.stuck = append(a.stuck, key)
		}
		pv, pvc := pvOf[key], pvcOf[key]
		if len(pv) > 1 || len(pvc) > 1 {
			a.duplicated = append(a.duplicated, fmt.Sprintf("%s (%d PVs, %d PVCs)", key, len(pv), len(pvc)))
		}
		if len(pv) == 1 && len(pvc) == 1 {
			ref := pv[0].Spec.ClaimRef
			if pvc[0].Spec.VolumeName != pv[0].Name || ref == nil || ref.Namespace != pvc[0].Namespace || ref.Name != pvc[0].Name {
				a.misbound = append(a.misbound, key)
			}
		}
	}
	for key, items := range pvOf {
		if !exists[key] {
			a.orphaned = append(a.orphaned, fmt.Sprintf("%d PV of %s", len(items), key))
		}
	}
	for key, items := range pvcOf {
		if !exists[key] {
			a.orphaned = append(a.orphaned, fmt.Sprintf("%d PVC of %s", len(items), key))
		}
	}
	slices.Sort(a.orphaned)
	return a, nil
}

// converged says what keeps the audit from showing want SharedVolumes, all Ready, with nothing
// wrong.
func (a volumeAudit) converged(want int) error {
	if p := a.problems(); len(p) > 0 || a.sharedVolumes != want || a.ready != want {
		return fmt.Errorf("%d SharedVolumes, %d Ready (%d claims Bound), want %d; %s", a.sharedVolumes, a.ready, a.bound, want, strings.Join(p, "; "))
	}
	return nil
}

// volumesConverged checks that want SharedVolumes exist, all Ready, with nothing wrong.
func volumesConverged(c client.Client, want int) func(context.Context) error {
	return func(ctx context.Context) error {
		a, err := auditVolumes(ctx, c)
		if err != nil {
			return err
		}
		return a.converged(want)
	}
}

// campaign runs the operator binary and SIGKILLs it at seeded random moments.
type campaign struct {
	t     *testing.T
	h     *harness
	bin   string
	op    *process
	rng   *rand.Rand
	seed  uint64
	kills int
	log   []string
}

// killWhile runs action, and meanwhile kills the operator n times, each after a random pause
// of up to maxPause, restarting it at once. It returns action's error.
func (c *campaign) killWhile(phase string, n int, maxPause time.Duration, action func() error) error {
	done := make(chan error, 1)
	go func() { done <- action() }()
	for range n {
		pause := time.Duration(c.rng.Int64N(int64(maxPause)))
		time.Sleep(pause)
		if err := c.op.kill(); err != nil {
			return err
		}
		c.kills++
		c.log = append(c.log, fmt.Sprintf("%s: kill #%d after %v", phase, c.kills, pause.Round(time.Millisecond)))
		c.op = c.h.startOperatorAsAdmin(c.bin)
	}
	return <-done
}

// convergeStall is how long a campaign waits, with nothing new in what it waits for (the reason
// the cluster has not converged yet), before it calls the operator stuck after a fault. A
// converging operator changes that reason as it goes: one SharedVolume fewer not Ready, an
// operand back. A whole campaign runs under campaignStall, each of its steps a step of progress.
const (
	convergeStall = 3 * time.Minute
	campaignStall = 5 * time.Minute
)

// timeToConverge waits for cond until nothing has progressed for convergeStall, and says how
// long it took.
func timeToConverge(ctx context.Context, what string, cond func(context.Context) error) (time.Duration, error) {
	begin := time.Now()
	converge, cancel := progress.WithStall(ctx, convergeStall)
	defer cancel()
	err := eventually(converge, what, cond)
	return time.Since(begin), err
}

// converge waits for cond after a phase, failing with the kill log and the operator's log.
func (c *campaign) converge(ctx context.Context, what string, cond func(context.Context) error) time.Duration {
	c.t.Helper()
	took, err := timeToConverge(ctx, what, cond)
	if err != nil {
		c.t.Fatalf("%v\nseed %d, kills:\n  %s\noperator log:\n%s", err, c.seed, strings.Join(c.log, "\n  "), tail(c.op.output(), 40))
	}
	return took
}

// operandsOnce checks every operand object exists exactly once: by name there can be only one,
// so it checks no second DaemonSet or Deployment runs the driver under another name.
func (h *harness) operandsOnce(ctx context.Context) error {
	for _, obj := range manualModeOperands() { // no CredentialsRequest in Manual mode
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return fmt.Errorf("%T %s: %w", obj, obj.GetName(), err)
		}
	}
	var daemonSets appsv1.DaemonSetList
	var deployments appsv1.DeploymentList
	if err := h.c.List(ctx, &daemonSets); err != nil {
		return err
	}
	if err := h.c.List(ctx, &deployments); err != nil {
		return err
	}
	runsDriver := func(pod corev1.PodSpec) bool {
		return slices.ContainsFunc(pod.Containers, func(c corev1.Container) bool { return strings.Contains(c.Image, "efs-csi-driver") })
	}
	var drivers []string
	for _, d := range daemonSets.Items {
		if runsDriver(d.Spec.Template.Spec) {
			drivers = append(drivers, "DaemonSet "+d.Namespace+"/"+d.Name)
		}
	}
	for _, d := range deployments.Items {
		if runsDriver(d.Spec.Template.Spec) {
			drivers = append(drivers, "Deployment "+d.Namespace+"/"+d.Name)
		}
	}
	if len(drivers) != 2 {
		return fmt.Errorf("want one node DaemonSet and one controller Deployment of the driver, have %v", drivers)
	}
	return nil
}

// operandsGone checks the driver's objects are all removed.
func (h *harness) operandsGone(ctx context.Context) error {
	for _, obj := range operands()[:3] { // the Deployment, DaemonSet and CSIDriver
		if err := h.gone(obj)(ctx); err != nil {
			return err
		}
	}
	return nil
}

// TestOperatorKillCampaign SIGKILLs the operator process at seeded random moments through every
// flow it runs: adopting the community driver, a burst of SharedVolumes created, Managed ↔
// Unmanaged ↔ Removed with volumes in use (the uninstall blocked), the burst deleted, the
// uninstall completing and the CR deleted. After each phase everything must converge: no PV or
// PVC orphaned, duplicated or bound to another SharedVolume's, no SharedVolume stuck deleting,
// every operand present once (or gone after the uninstall). A watch checks all along that the
// driver is never deleted while a pod uses an EFS volume.
func TestOperatorKillCampaign(t *testing.T) {
	seed := chaosSeed(t)
	bin := buildOperator(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, cancel := progress.WithStall(context.Background(), campaignStall)
	defer cancel()
	dw := watchDriver(ctx, t, h.kube)

	// The community operator's install, then the bundle's SharedVolume CRD over it, as OLM
	// applies it when the Subscription switches.
	community := seedCommunityInstall(ctx, t, h)
	svCRD, err := testbed.DecodeCRD(crd.SharedVolumes)
	must(t, err)
	must(t, testbed.InstallCRDs(ctx, h.c, svCRD))
	communityDS := community[4].(*appsv1.DaemonSet)
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(communityDS), communityDS))

	c := &campaign{t: t, h: h, bin: bin, seed: seed, rng: rand.New(rand.NewPCG(seed, seed>>1|1))}
	c.op = h.startOperatorAsAdmin(bin)
	took := map[string]time.Duration{}

	must(t, c.killWhile("adoption", 4, 3*time.Second, func() error {
		h.createCR(ctx, efs.CRName, operatorv1.Managed)
		return nil
	}))
	took["adoption"] = c.converge(ctx, "the community driver adopted in place", func(ctx context.Context) error {
		ds := &appsv1.DaemonSet{}
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(communityDS), ds); err != nil {
			return err
		}
		if ds.UID != communityDS.UID {
			return fmt.Errorf("the DaemonSet was re-created (UID %s, was %s)", ds.UID, communityDS.UID)
		}
		if err := h.conditionIs("AWSEFSDriverAdoptionProgressing", operatorv1.ConditionFalse)(ctx); err != nil {
			return err
		}
		return h.operandsOnce(ctx)
	})

	svs := burst("kill")
	var created atomic.Int64
	must(t, c.killWhile("create a burst", 5, 3*time.Second, func() error { return createBurst(ctx, h.c, svs, &created) }))
	took["create"] = c.converge(ctx, fmt.Sprintf("%d SharedVolumes Ready", burstSize), volumesConverged(h.c, burstSize))

	// A pod in each namespace uses the first SharedVolume there: pods using volumes, not the
	// volumes, hold an uninstall back.
	var users []*corev1.Pod
	for _, sv := range svs[:burstNamespaces] {
		pod := fixture.PodUsing(sv.Namespace, "user-of-"+sv.Name, volumes.PVCName(sv))
		must(t, h.c.Create(ctx, pod))
		users = append(users, pod)
	}
	must(t, c.killWhile("state changes with volumes in use", 4, 2*time.Second, func() error {
		for _, state := range []operatorv1.ManagementState{operatorv1.Unmanaged, operatorv1.Managed, operatorv1.Removed} {
			if err := h.patchState(ctx, state); err != nil {
				return err
			}
			time.Sleep(time.Second)
		}
		return nil
	}))
	took["blocked uninstall"] = c.converge(ctx, "the uninstall blocked by the pods", func(ctx context.Context) error {
		if err := h.conditionWith("AWSEFSDriverUninstallDegraded", operatorv1.ConditionTrue, "VolumesInUse")(ctx); err != nil {
			return err
		}
		if err := h.operandsOnce(ctx); err != nil {
			return err
		}
		return volumesConverged(h.c, burstSize)(ctx)
	})

	must(t, c.killWhile("stop the pods and delete the burst", 5, 3*time.Second, func() error {
		for _, pod := range users {
			if err := persist(ctx, func(ctx context.Context) error { return deletePodNow(ctx, h.c, pod.Namespace, pod.Name) }); err != nil {
				return err
			}
		}
		return deleteBurst(ctx, h.c, svs)
	}))
	took["delete"] = c.converge(ctx, "every SharedVolume and its volumes gone", volumesConverged(h.c, 0))

	must(t, c.killWhile("uninstall", 2, 5*time.Second, func() error { return nil }))
	took["uninstall"] = c.converge(ctx, "the driver removed", func(ctx context.Context) error {
		if err := h.conditionWith("AWSEFSDriverUninstallProgressing", operatorv1.ConditionFalse, "DriverRemoved")(ctx); err != nil {
			return err
		}
		return h.operandsGone(ctx)
	})
	cr, err := h.cr(ctx)
	must(t, err)
	must(t, c.killWhile("delete the CR", 2, 2*time.Second, func() error { return h.c.Delete(ctx, cr) }))
	took["CR deleted"] = c.converge(ctx, "the CR gone", h.gone(cr))

	violations, deletions, err := dw.verdicts(ctx, driverObjects...)
	must(t, err)
	if len(violations) > 0 {
		t.Fatalf("the driver was deleted under a volume: %s\nkills:\n  %s", violations[0], strings.Join(c.log, "\n  "))
	}
	if c.kills < 20 {
		t.Fatalf("only %d kills", c.kills)
	}
	t.Logf("seed %d: %d kills, %d deletions of a driver object judged, 0 violations; 0 orphaned, duplicated or misbound PV/PVC and 0 stuck SharedVolumes after each phase", seed, c.kills, deletions)
	for _, phase := range []string{"adoption", "create", "blocked uninstall", "delete", "uninstall", "CR deleted"} {
		t.Logf("converged after %-17s in %v", phase, took[phase].Round(100*time.Millisecond))
	}
}

// driverUIDs are the UIDs of the driver's CSIDriver, DaemonSet and Deployment: a deletion and
// re-creation of any of them, however brief, changes its UID.
func (h *harness) driverUIDs(ctx context.Context) (map[string]string, error) {
	uids := map[string]string{}
	for _, obj := range operands()[:3] {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil, err
		}
		uids[fmt.Sprintf("%T %s", obj, obj.GetName())] = string(obj.GetUID())
	}
	return uids, nil
}

// TestControlPlaneFaultsConverge restarts the control plane under the running operator: the API
// server during the install and again during a burst of SharedVolumes, etcd once during the
// burst. Then it freezes the API server with SIGSTOP for 30 s, as a hung host or a partition
// does. The operator runs with leader election, as shipped. It must ride out every fault
// without a restart of its own and converge: every SharedVolume Ready with exactly its own PV
// and PVC, and the driver never deleted (its objects keep their UIDs from install to end; a
// watch cannot judge deletions here, since a restarted API server ends every watch).
func TestControlPlaneFaultsConverge(t *testing.T) {
	bin := buildOperator(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, cancel := progress.WithStall(context.Background(), campaignStall)
	defer cancel()
	svCRD, err := testbed.DecodeCRD(crd.SharedVolumes)
	must(t, err)
	must(t, testbed.InstallCRDs(ctx, h.c, svCRD))
	op := h.startOperatorBinary(bin)
	var figures []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nso far:\n  %s\noperator log:\n%s\n%s", fmt.Sprintf(format, args...), strings.Join(figures, "\n  "), tail(op.output(), 40), h.stack.LogTails(15))
	}
	converge := func(what string, cond func(context.Context) error) time.Duration {
		t.Helper()
		took, err := timeToConverge(ctx, what, cond)
		if err != nil {
			fail("%v", err)
		}
		return took
	}
	fault := func(what string, do func() error) {
		t.Helper()
		begin := time.Now()
		if err := do(); err != nil {
			fail("%s: %v", what, err)
		}
		figures = append(figures, fmt.Sprintf("%s: back in %v", what, time.Since(begin).Round(100*time.Millisecond)))
	}
	restart := func(component string) func() error {
		return func() error { return h.stack.Restart(ctx, component) }
	}
	installed := func(ctx context.Context) error {
		if err := h.operandsOnce(ctx); err != nil {
			return err
		}
		for _, obj := range operands()[:2] {
			if err := h.available(obj)(ctx); err != nil {
				return err
			}
		}
		return nil
	}

	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	converge("the install to begin", h.exists(operands()[2]))
	fault("kube-apiserver restarted during the install", restart(testbed.APIServerComponent))
	took := converge("the driver installed", installed)
	figures = append(figures, fmt.Sprintf("installed %v after the restart", took.Round(100*time.Millisecond)))
	uids, err := h.driverUIDs(ctx)
	must(t, err)

	svs := burst("cp")
	var created atomic.Int64
	creating := make(chan error, 1)
	go func() { creating <- createBurst(ctx, h.c, svs, &created) }()
	for _, f := range []struct {
		after     int64
		component string
	}{{50, testbed.EtcdComponent}, {120, testbed.APIServerComponent}} {
		converge(fmt.Sprintf("%d SharedVolumes created", f.after), func(context.Context) error {
			if n := created.Load(); n < f.after {
				return fmt.Errorf("%d created", n)
			}
			return nil
		})
		fault(fmt.Sprintf("%s restarted after %d of %d SharedVolumes were created", f.component, created.Load(), burstSize), restart(f.component))
	}
	if err := <-creating; err != nil {
		fail("creating the burst: %v", err)
	}
	var allBound time.Time
	took = converge(fmt.Sprintf("%d SharedVolumes Ready", burstSize), func(ctx context.Context) error {
		a, err := auditVolumes(ctx, h.c)
		if err != nil {
			return err
		}
		if a.bound == burstSize && allBound.IsZero() {
			allBound = time.Now()
		}
		return a.converged(burstSize)
	})
	lag := time.Since(allBound)
	figures = append(figures, fmt.Sprintf("%d SharedVolumes Ready %v after the last one was created, %v after the last claim was Bound",
		burstSize, took.Round(100*time.Millisecond), lag.Round(100*time.Millisecond)))
	// A claim bound while the operator's watch was down is seen at the watch's relist, up to a
	// minute later, unless the operator looks for itself: it reads overdue claims from the API
	// server every 10 s.
	if lag > 30*time.Second {
		fail("the last SharedVolume became Ready %v after the last claim was Bound", lag)
	}

	fault("kube-apiserver frozen with SIGSTOP for 30 s", func() error {
		resume, err := h.stack.Pause(testbed.APIServerComponent)
		if err != nil {
			return err
		}
		time.Sleep(30 * time.Second)
		return resume()
	})
	// After the stall the operator must still act: half of the burst is deleted, and the rest
	// stays Ready.
	must(t, deleteBurst(ctx, h.c, svs[:burstSize/2]))
	took = converge("half of the burst deleted after the stall", volumesConverged(h.c, burstSize/2))
	figures = append(figures, fmt.Sprintf("%d SharedVolumes deleted %v after the stall", burstSize/2, took.Round(100*time.Millisecond)))

	converge("the driver still installed", installed)
	after, err := h.driverUIDs(ctx)
	must(t, err)
	for what, uid := range uids {
		if after[what] != uid {
			fail("%s was deleted and re-created during the faults (UID %s, was %s)", what, after[what], uid)
		}
	}
	select {
	case <-op.exited:
		fail("the operator exited during the faults: %v", op.err)
	default:
	}
	for _, f := range figures {
		t.Log(f)
	}
	t.Log("the operator rode out 2 API server restarts, 1 etcd restart and a 30 s stall without a restart of its own; 0 orphaned, duplicated or misbound PV/PVC; the driver kept its UIDs")
}
