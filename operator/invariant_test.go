package operator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// Environment of the property test: the seed to replay (printed by every run) and the number of
// steps: shortSteps unless set (`make test`), 200 in `make e2e`, 2,000 in `make chaos`.
const (
	seedEnv  = "CSI_OLM_CHAOS_SEED"
	stepsEnv = "CSI_OLM_CHAOS_STEPS"
	// shortSteps is the short form: a step takes about 2 s, and the long forms belong to the
	// tiers that run the real node and the long campaigns.
	shortSteps = 40
)

// driverWatch watches the driver's objects through a whole test and records each deletion that
// began while a pod used a volume of the driver. It judges a deletion at the very revision it
// happened: the PersistentVolumes and pods are listed at exactly that resourceVersion.
type driverWatch struct {
	kube kubernetes.Interface

	mu         sync.Mutex
	changed    *sync.Cond // signalled whenever judging or judged changes
	violations []string
	judging    int            // deletions delivered by a watch whose verdict is not in yet
	judged     map[string]int // deletions judged, by the object's description
}

// The objects a driverWatch follows, as its verdicts name them.
var (
	watchedCSIDriver  = "CSIDriver " + efs.DriverName
	watchedDaemonSet  = "DaemonSet " + efs.NodeDaemonSet
	watchedDeployment = "Deployment " + efs.ControllerDeployment
	driverObjects     = []string{watchedCSIDriver, watchedDaemonSet, watchedDeployment}
)

// watchDriver starts watching the CSIDriver, the node DaemonSet and the controller Deployment.
func watchDriver(ctx context.Context, t *testing.T, kube kubernetes.Interface) *driverWatch {
	t.Helper()
	w := &driverWatch{kube: kube, judged: map[string]int{}}
	w.changed = sync.NewCond(&w.mu)
	for _, target := range []struct {
		what string
		lw   *cache.ListWatch
	}{
		{watchedCSIDriver, cache.NewListWatchFromClient(kube.StorageV1().RESTClient(), "csidrivers", "", fields.OneTermEqualSelector("metadata.name", efs.DriverName))},
		{watchedDaemonSet, cache.NewListWatchFromClient(kube.AppsV1().RESTClient(), "daemonsets", ns, fields.OneTermEqualSelector("metadata.name", efs.NodeDaemonSet))},
		{watchedDeployment, cache.NewListWatchFromClient(kube.AppsV1().RESTClient(), "deployments", ns, fields.OneTermEqualSelector("metadata.name", efs.ControllerDeployment))},
	} {
		list, err := target.lw.ListWithContext(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv, err := meta.NewAccessor().ResourceVersion(list)
		if err != nil {
			t.Fatal(err)
		}
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, target.lw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(rw.Stop)
		go w.follow(ctx, target.what, rw)
	}
	return w
}

func (w *driverWatch) follow(ctx context.Context, what string, rw *watchtools.RetryWatcher) {
	deleting := map[string]bool{} // objects whose deletion was already judged, by UID
	for ev := range rw.ResultChan() {
		obj, err := meta.Accessor(ev.Object)
		if err != nil || (ev.Type != watch.Deleted && ev.Type != watch.Modified) {
			continue
		}
		// A deletion begins with deletionTimestamp (when finalizers hold it) or is the removal.
		if (ev.Type == watch.Modified && obj.GetDeletionTimestamp() == nil) || deleting[string(obj.GetUID())] {
			continue
		}
		deleting[string(obj.GetUID())] = true
		w.mu.Lock()
		w.judging++
		w.mu.Unlock()
		w.judge(ctx, what, obj.GetResourceVersion())
	}
	// A watch that ends early (the API server answered 410 Gone, say) judges nothing more: that
	// must fail the test rather than let the rest of it pass unchecked.
	if ctx.Err() == nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.violations = append(w.violations, "the watch of "+what+" ended before the test did: later deletions were not judged")
	}
}

// judge checks that no pod used a PersistentVolume of the driver at revision rv: no pod that has
// not finished used a claim an EFS volume is bound to. Every deletion a watch delivered gets a
// verdict, the test's end notwithstanding: the lists run past ctx (at the field's size they list
// 100,000 PersistentVolumes, which a slow machine can still be doing when the test stops its
// watches), and a deletion whose revision cannot be read is a violation, never a silent skip.
//
// The lists come in pages, each a request of its own at the same revision: one list of 100,000
// PersistentVolumes outlasted the API server's own time for a request on a machine at half speed.
func (w *driverWatch) judge(ctx context.Context, what, rv string) {
	ctx = context.WithoutCancel(ctx)
	var problem string
	pvs, err := listAt(ctx, rv, func(ctx context.Context, opts metav1.ListOptions) ([]corev1.PersistentVolume, string, error) {
		l, err := w.kube.CoreV1().PersistentVolumes().List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
	var pods []corev1.Pod
	if err == nil {
		pods, err = listAt(ctx, rv, func(ctx context.Context, opts metav1.ListOptions) ([]corev1.Pod, string, error) {
			l, err := w.kube.CoreV1().Pods("").List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		})
	}
	switch {
	case err != nil:
		problem = fmt.Sprintf("%s deleted at revision %s, and the volumes and pods of that revision cannot be read: %v", what, rv, err)
	default:
		if inUse := podsUsingEFS(pvs, pods); len(inUse) > 0 {
			problem = fmt.Sprintf("%s deleted at revision %s while pods used volumes of %s: %v", what, rv, efs.DriverName, inUse)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.judged[what]++
	w.judging--
	w.changed.Broadcast()
	if problem != "" {
		w.violations = append(w.violations, problem)
	}
}

// listAt lists every object at revision rv, a page at a time: the first page at exactly rv, the
// others by the continue token, which carries the revision (the API server refuses a revision
// beside it).
func listAt[T any](ctx context.Context, rv string, list func(context.Context, metav1.ListOptions) ([]T, string, error)) ([]T, error) {
	const page = 1000
	opts := metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: page}
	var all []T
	for {
		items, next, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		opts = metav1.ListOptions{Continue: next, Limit: page}
	}
}

// podsUsingEFS names the pods that have not finished and use a claim bound to an EFS volume.
func podsUsingEFS(pvs []corev1.PersistentVolume, pods []corev1.Pod) []string {
	efsClaims := map[string]string{}
	for _, pv := range pvs {
		if pv.Spec.CSI != nil && pv.Spec.CSI.Driver == efs.DriverName && pv.Spec.ClaimRef != nil {
			efsClaims[pv.Spec.ClaimRef.Namespace+"/"+pv.Spec.ClaimRef.Name] = pv.Name
		}
	}
	var using []string
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			if pv, ok := efsClaims[pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]; ok {
				using = append(using, fmt.Sprintf("pod %s/%s on %s", pod.Namespace, pod.Name, pv))
			}
		}
	}
	return using
}

// state returns the violations so far and how many deletions were judged, while the verdicts
// of deletions just delivered may still be coming: for a look during a test. The test's last
// word reads verdicts.
func (w *driverWatch) state() ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations), w.deletionsJudged()
}

// deletionsJudged is how many deletions have a verdict; w.mu is held.
func (w *driverWatch) deletionsJudged() int {
	n := 0
	for _, c := range w.judged {
		n += c
	}
	return n
}

// verdicts returns the violations and the number of deletions judged once every deletion the
// watches delivered has its verdict and each object of deleted has had a deletion judged: a
// verdict is read only once it exists. A test that saw an object go names it in deleted, since
// the watch may deliver that deletion a moment after the test's own read. Only ctx ends the wait
// early, and then the error says which verdicts were missing.
func (w *driverWatch) verdicts(ctx context.Context, deleted ...string) ([]string, int, error) {
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.changed.Broadcast()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		var missing []string
		if w.judging > 0 {
			missing = append(missing, fmt.Sprintf("%d deletion(s) being judged", w.judging))
		}
		for _, what := range deleted {
			if w.judged[what] == 0 {
				missing = append(missing, "the deletion of "+what)
			}
		}
		if len(missing) == 0 {
			return slices.Clone(w.violations), w.deletionsJudged(), nil
		}
		if ctx.Err() != nil {
			return nil, 0, fmt.Errorf("waiting for the verdicts on %s: %w", strings.Join(missing, ", "), progress.Cause(ctx))
		}
		w.changed.Wait()
	}
}

// chaosSeed is the seed of a seeded test, from the environment or chosen now, and printed so
// that a failure can be replayed.
func chaosSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s: %v", seedEnv, err)
		}
	}
	t.Logf("seed %d; replay with %s=%d", seed, seedEnv, seed)
	return seed
}

// chaosConfig is the seed and number of steps of a property-test run.
func chaosConfig(t *testing.T) (seed uint64, steps int) {
	t.Helper()
	seed, steps = chaosSeed(t), shortSteps
	if v := os.Getenv(stepsEnv); v != "" {
		var err error
		if steps, err = strconv.Atoi(v); err != nil || steps < 1 {
			t.Fatalf("%s=%q: want a positive number", stepsEnv, v)
		}
	}
	t.Logf("%d steps (%s)", steps, stepsEnv)
	return seed, steps
}

// TestDriverNeverDeletedUnderAVolume is a property test of the operator's central promise: the
// driver (CSIDriver, node DaemonSet, controller Deployment) is never deleted while a pod uses a
// PersistentVolume of efs.csi.aws.com. Seeded random interleavings of PV creates and deletes, pods
// that start and stop using them, management-state changes, CR deletes and recreates, and SIGKILLs
// of the operator process run while a watch judges every deletion of the driver at the revision
// it happened. The first violation fails the test with the steps that led to it; at the end the
// operator must converge, installing the driver under Managed and uninstalling it once no pod
// uses a volume, with the volumes still there.
func TestDriverNeverDeletedUnderAVolume(t *testing.T) {
	seed, steps := chaosConfig(t)
	bin := buildOperator(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	// Each step is a step of progress: a step takes about a second on average (its pause, a
	// kill's restart, a quiet spell), however many of them the run has.
	ctx, cancel := progress.WithStall(context.Background(), campaignStall)
	defer cancel()
	dw := watchDriver(ctx, t, h.kube)
	proveTheWatchCatches(ctx, t, h, dw)

	operatorProc := h.startOperatorAsAdmin(bin)
	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	var log []string
	var pvs, pods []string
	pvSeq, podSeq, kills, refused := 0, 0, 0, 0
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nafter %d steps (seed %d):\n  %s\noperator log:\n%s", fmt.Sprintf(format, args...), len(log), seed, strings.Join(log, "\n  "), tail(operatorProc.output(), 40))
	}
	type step struct {
		name   string
		weight int
		run    func() (string, error)
	}
	crExists := func() bool {
		_, err := h.cr(ctx)
		return err == nil
	}
	// Each volume is pre-bound to a claim of its own name in appNS, which pods use.
	const appNS = "app"
	must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}}))
	all := []step{
		{"create a PV", 2, func() (string, error) {
			pvSeq++
			name := fmt.Sprintf("chaos-pv-%d", pvSeq)
			err := h.c.Create(ctx, fixture.ClaimedEFSPV(name, appNS, name))
			if operator.RefusedByRemovalFence(err) {
				refused++
				return name + " refused by the removal fence", nil
			}
			pvs = append(pvs, name)
			return name, err
		}},
		{"delete a PV", 2, func() (string, error) {
			if len(pvs) == 0 {
				return "none to delete", nil
			}
			i := rng.IntN(len(pvs))
			name := pvs[i]
			pvs = slices.Delete(pvs, i, i+1)
			return name, client.IgnoreNotFound(h.c.Delete(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		}},
		{"start a pod on a volume", 3, func() (string, error) {
			if len(pvs) == 0 {
				return "no volume to use", nil
			}
			podSeq++
			name, claim := fmt.Sprintf("chaos-pod-%d", podSeq), pvs[rng.IntN(len(pvs))]
			err := h.c.Create(ctx, fixture.PodUsing(appNS, name, claim))
			if operator.RefusedByRemovalFence(err) {
				refused++
				return name + " on " + claim + " refused by the removal fence", nil
			}
			pods = append(pods, name)
			return name + " on " + claim, err
		}},
		{"stop a pod", 3, func() (string, error) {
			if len(pods) == 0 {
				return "none to stop", nil
			}
			i := rng.IntN(len(pods))
			name := pods[i]
			pods = slices.Delete(pods, i, i+1)
			return name, deletePodNow(ctx, h.c, appNS, name)
		}},
		{"set the management state", 4, func() (string, error) {
			state := []operatorv1.ManagementState{operatorv1.Managed, operatorv1.Unmanaged, operatorv1.Removed}[rng.IntN(3)]
			if !crExists() {
				h.createCR(ctx, efs.CRName, state)
				return "created " + string(state), nil
			}
			return string(state), client.IgnoreNotFound(h.patchState(ctx, state))
		}},
		{"delete the CR", 2, func() (string, error) {
			cr, err := h.cr(ctx)
			if apierrors.IsNotFound(err) {
				return "none", nil
			}
			if err != nil {
				return "", err
			}
			return "", client.IgnoreNotFound(h.c.Delete(ctx, cr))
		}},
		// The operator looks at pods again 10 s after it found some in use: an uninstall needs a
		// quiet spell without them.
		{"let the operator work", 3, func() (string, error) {
			d := time.Duration(2+rng.IntN(11)) * time.Second
			time.Sleep(d)
			return d.String(), nil
		}},
		{"kill the operator", 2, func() (string, error) {
			if err := operatorProc.kill(); err != nil {
				return "", err
			}
			kills++
			operatorProc = h.startOperatorAsAdmin(bin)
			return fmt.Sprintf("kill #%d, restarted", kills), nil
		}},
	}
	total := 0
	for _, s := range all {
		total += s.weight
	}
	for i := 0; i < steps; i++ {
		pick := rng.IntN(total)
		s := all[0]
		for _, c := range all {
			if pick < c.weight {
				s = c
				break
			}
			pick -= c.weight
		}
		detail, err := s.run()
		log = append(log, fmt.Sprintf("%3d %s: %s", i, s.name, detail))
		progress.Advance(ctx, log[len(log)-1])
		if err != nil {
			fail("step %d (%s): %v", i, s.name, err)
		}
		// Let the operator act on the step, for a varying while.
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		if violations, _ := dw.state(); len(violations) > 0 {
			fail("the driver was deleted under a volume: %s", violations[0])
		}
	}
	violations, deletions, err := dw.verdicts(ctx)
	must(t, err)
	t.Logf("%d steps, %d operator kills, %d deletions of a driver object judged, %d creates (PVs and pods) refused by the removal fence, %d violations",
		steps, kills, deletions, refused, len(violations))
	if deletions == 0 && steps >= 100 {
		fail("the operator never deleted the driver during the run: it proves nothing")
	}

	// Convergence, with no pod on the volumes: a CR being deleted finishes, Managed installs the
	// driver, and deleting the CR removes it while the volumes stay.
	converge, stop := progress.WithStall(ctx, convergeStall)
	defer stop()
	for _, name := range pods {
		must(t, deletePodNow(converge, h.c, appNS, name))
	}
	must(t, eventually(converge, "the CR gone or not being deleted", func(ctx context.Context) error {
		if cr, err := h.cr(ctx); err == nil && cr.DeletionTimestamp != nil {
			return fmt.Errorf("still being deleted, finalizers %v", cr.Finalizers)
		}
		return nil
	}))
	if crExists() {
		h.setState(converge, operatorv1.Managed)
	} else {
		h.createCR(converge, efs.CRName, operatorv1.Managed)
	}
	for _, obj := range manualModeOperands() { // no CredentialsRequest in Manual mode
		if err := eventually(converge, "operand "+obj.GetName()+" after the run", h.exists(obj)); err != nil {
			fail("%v", err)
		}
	}
	cr, err := h.cr(converge)
	must(t, err)
	must(t, h.c.Delete(converge, cr))
	must(t, eventually(converge, "the CR gone once no pod uses a volume", h.gone(cr)))
	if err := eventually(converge, "the driver removed", h.operandsGone); err != nil {
		fail("%v", err)
	}
	for _, name := range pvs {
		if err := h.c.Get(converge, client.ObjectKey{Name: name}, &corev1.PersistentVolume{}); err != nil {
			fail("volume %s, which no pod used, after the uninstall: %v", name, err)
		}
	}
	violations, _, err = dw.verdicts(converge, driverObjects...)
	must(t, err)
	if len(violations) > 0 {
		fail("the driver was deleted under a volume: %s", violations[0])
	}
}

// proveTheWatchCatches deletes a hand-made DaemonSet while a pod uses an EFS volume, before the
// operator runs, and expects the watch to report it: a watch that cannot fail would prove nothing.
func proveTheWatchCatches(ctx context.Context, t *testing.T, h *harness, w *driverWatch) {
	t.Helper()
	must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "watch-self-test"}}))
	pv := fixture.ClaimedEFSPV("watch-self-test", "watch-self-test", "data")
	pod := fixture.PodUsing("watch-self-test", "app", "data")
	must(t, h.c.Create(ctx, pv))
	must(t, h.c.Create(ctx, pod))
	labels := map[string]string{"app": "self-test"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "self-test"}}},
			},
		},
	}
	must(t, h.c.Create(ctx, ds))
	must(t, h.c.Delete(ctx, ds))
	must(t, eventually(ctx, "the watch to report the hand-made violation", func(context.Context) error {
		if v, _ := w.state(); len(v) == 0 {
			return fmt.Errorf("no violation reported")
		}
		return nil
	}))
	must(t, deletePodNow(ctx, h.c, pod.Namespace, pod.Name))
	must(t, h.c.Delete(ctx, pv))
	must(t, eventually(ctx, "the self-test PV gone", h.gone(pv)))
	// The verdict on the self-test's deletion must be in before it is forgotten.
	_, _, err := w.verdicts(ctx, watchedDaemonSet)
	must(t, err)
	w.mu.Lock()
	w.violations, w.judged = nil, map[string]int{}
	w.mu.Unlock()
}

// deletePodNow deletes a pod without a grace period: pods no node runs have nothing to wait for.
func deletePodNow(ctx context.Context, c client.Client, namespace, name string) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return client.IgnoreNotFound(c.Delete(ctx, pod, client.GracePeriodSeconds(0)))
}

// TestVolumesRacingARemovalNeverLoseTheDriver aims at the gap the property test found: a volume
// put to use in the moment between the operator's last look and its deletes. While the driver is
// set Removed, two writers start and stop pods on an EFS volume nobody else uses, with quiet
// spells of up to 100 ms, and the watch judges every deletion of the driver at its revision. The
// removal fence must refuse the writers before the last look, so the removal completes, no
// deletion finds a pod on a volume, and some starts are refused (else the race was not run).
// With the fence switched off by hand it fails in the first round.
func TestVolumesRacingARemovalNeverLoseTheDriver(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, cancel := progress.WithStall(context.Background(), campaignStall)
	defer cancel()
	dw := watchDriver(ctx, t, h.kube)
	proveTheWatchCatches(ctx, t, h, dw)
	h.runOperator()
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	const appNS = "race"
	must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNS}}))
	must(t, h.c.Create(ctx, fixture.ClaimedEFSPV("race-volume", appNS, "data")))

	const rounds, writers = 3, 2
	var created, refused atomic.Int64
	for round := range rounds {
		h.setState(ctx, operatorv1.Managed)
		for _, obj := range operands()[:3] {
			must(t, eventually(ctx, fmt.Sprintf("round %d: operand %s", round, obj.GetName()), h.exists(obj)))
		}
		racing, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := 0; racing.Err() == nil; i++ {
					pod := fixture.PodUsing(appNS, fmt.Sprintf("race-%d-%d-%d", round, w, i), "data")
					switch err := h.c.Create(racing, pod); {
					case err == nil:
						created.Add(1)
						_ = deletePodNow(racing, h.c, appNS, pod.Name)
					case operator.RefusedByRemovalFence(err):
						refused.Add(1)
					case racing.Err() == nil:
						t.Errorf("round %d: creating pod %s: %v", round, pod.Name, err)
					}
					// Quiet spells of up to 100 ms let a look find no pod now and then, as it
					// must for the removal to go on.
					time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
				}
			})
		}
		h.setState(ctx, operatorv1.Removed)
		removal, done := progress.WithStall(ctx, convergeStall)
		err := eventually(removal, fmt.Sprintf("round %d: the driver removed under the writers", round), h.operandsGone)
		done()
		stop()
		wg.Wait()
		must(t, err)
		violations, _, err := dw.verdicts(ctx, driverObjects...)
		must(t, err)
		if len(violations) > 0 {
			t.Fatalf("round %d: the driver was deleted under a volume in use: %s", round, violations[0])
		}
	}
	violations, deletions, err := dw.verdicts(ctx)
	must(t, err)
	t.Logf("%d rounds: %d pods started and stopped, %d refused by the removal fence, %d deletions of a driver object judged, %d violations",
		rounds, created.Load(), refused.Load(), deletions, len(violations))
	if refused.Load() == 0 || created.Load() == 0 || deletions == 0 {
		t.Fatalf("the writers never raced a removal (%d created, %d refused, %d deletions judged): the test proved nothing", created.Load(), refused.Load(), deletions)
	}
}
