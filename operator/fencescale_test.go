package operator_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator"
	fencev1alpha1 "github.com/csi-olm/csi-olm/operator/api/v1alpha1"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// claimLayout is how a test spreads EFS claims over namespaces: the first namespace holds
// first of them, the others the rest, in turn.
type claimLayout struct {
	claims, namespaces, first int
}

// fieldScale is the size the removal fence must hold at: 100,000 claims over 10,000 namespaces,
// 20,000 of them in one namespace. The annotations the fence once was stopped at about 10,000.
// shortScale, a hundredth of it, is the short form `make test` runs.
var (
	fieldScale = claimLayout{claims: 100_000, namespaces: 10_000, first: 20_000}
	shortScale = claimLayout{claims: 1_000, namespaces: 100, first: 200}
)

// fenceStall is how long TestRemovalFenceAtScale lets pass with nothing new (a thousand objects
// created, a new condition, a deletion judged) before it calls the removal stuck. The longest
// single step is one list of every PersistentVolume and pod at a deletion's revision: at the
// field's size, tens of seconds on a slow machine. The whole test takes many such windows.
const fenceStall = 3 * time.Minute

// fenceScaleEnv sets the number of claims TestRemovalFenceAtScale runs with: shortScale unless
// set (`make test`), fieldScale's 100,000 in `make e2e`.
const fenceScaleEnv = "CSI_OLM_FENCE_SCALE"

func (l claimLayout) namespace(j int) string { return fmt.Sprintf("team-%05d", j) }

// at is claim i's namespace and name.
func (l claimLayout) at(i int) (string, string) {
	name := fmt.Sprintf("data-%06d", i)
	if i < l.first {
		return l.namespace(0), name
	}
	return l.namespace(1 + (i-l.first)%(l.namespaces-1)), name
}

// in is the index of namespace j's k-th claim (k below l.count(j)).
func (l claimLayout) in(j, k int) int {
	if j == 0 {
		return k
	}
	return l.first + (j - 1) + k*(l.namespaces-1)
}

// count is how many claims namespace j holds.
func (l claimLayout) count(j int) int {
	if j == 0 {
		return l.first
	}
	rest := l.claims - l.first
	n := rest / (l.namespaces - 1)
	if j-1 < rest%(l.namespaces-1) {
		n++
	}
	return n
}

// create makes the namespaces and, pre-bound to each claim, an EFS PersistentVolume: what the
// operator reads the claims from. No claim object is needed for that, nor for a pod to be
// admitted. Every thousand objects made is a step of ctx's progress.
func (l claimLayout) create(ctx context.Context, tb testing.TB, config *rest.Config) {
	tb.Helper()
	fast := rest.CopyConfig(config)
	fast.QPS, fast.Burst = 10000, 10000
	// Protobuf costs the API server, the bottleneck here, less than JSON.
	fast.ContentType = "application/vnd.kubernetes.protobuf"
	kube := kubernetes.NewForConfigOrDie(fast)
	start := time.Now()
	var made atomic.Int64
	step := func(what string) {
		if n := made.Add(1); n%1000 == 0 {
			progress.Advance(ctx, fmt.Sprintf("%d objects created, the last %s", n, what))
		}
	}
	must(tb, testutil.ParallelOn(32, l.namespaces, func(j int) error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.namespace(j)}}, metav1.CreateOptions{})
		step("namespace " + l.namespace(j))
		return err
	}))
	must(tb, testutil.ParallelOn(32, l.claims, func(i int) error {
		namespace, claim := l.at(i)
		name := fmt.Sprintf("efs-%06d", i)
		_, err := kube.CoreV1().PersistentVolumes().Create(ctx, fixture.ClaimedEFSPV(name, namespace, claim), metav1.CreateOptions{})
		step("PersistentVolume " + name)
		return err
	}))
	tb.Logf("created %d namespaces and %d EFS PersistentVolumes pre-bound to claims in them in %s", l.namespaces, l.claims, time.Since(start).Round(time.Second))
}

// removalFences lists the RemovalFences in the operator's namespace, as metadata.
func (h *harness) removalFences(ctx context.Context) ([]metav1.PartialObjectMetadata, error) {
	var fences metav1.PartialObjectMetadataList
	fences.SetGroupVersionKind(fencev1alpha1.GroupVersion.WithKind(fencev1alpha1.Kind + "List"))
	if err := h.c.List(ctx, &fences, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	return fences.Items, nil
}

// fencesGone reports the RemovalFences left in the operator's namespace, if any.
func (h *harness) fencesGone(ctx context.Context) error {
	left, err := h.removalFences(ctx)
	if err == nil && len(left) > 0 {
		err = fmt.Errorf("%d RemovalFences left, %s the first", len(left), left[0].Name)
	}
	return err
}

// TestRemovalFenceAtScale: a removal keeps the fence's guarantee with 100,000 EFS claims over
// 10,000 namespaces, 20,000 of them in one. Writers in the big namespace and in nine others keep
// creating pods on claims there while the driver is set Removed; a pod admitted before the fence
// holds is stopped at once, so the removal can go on. The removal must complete; once the
// lifecycle reports RemovingDriver (the fence was proved before it), no writer's pod may be
// admitted; every writer must have been refused; and the watch judges every deletion of the
// driver at its revision. CSI_OLM_FENCE_SCALE=N runs it at N claims (a tenth as many
// namespaces, a fifth of the claims in the first).
func TestRemovalFenceAtScale(t *testing.T) {
	layout := shortScale
	if v := os.Getenv(fenceScaleEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			t.Fatalf("%s=%q: want a number of claims, 100 or more", fenceScaleEnv, v)
		}
		layout = claimLayout{claims: n, namespaces: n / 10, first: n / 5}
	}
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, stop := progress.WithStall(context.Background(), fenceStall)
	defer stop()
	layout.create(ctx, t, h.stack.Config)
	dw := watchDriver(ctx, t, h.kube)
	h.runOperator()
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	for _, obj := range manualModeOperands() {
		must(t, eventually(ctx, "operand "+obj.GetName(), h.exists(obj)))
	}

	// The writers' namespaces: the big one and nine spread over the rest.
	writers := []int{0}
	for w := 1; w < 10; w++ {
		writers = append(writers, 1+w*(layout.namespaces-1)/10)
	}
	for _, j := range writers {
		// No controller manager runs to create it, and pods are admitted only with it.
		must(t, h.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: layout.namespace(j), Name: "default"}}))
	}
	var fenceProved atomic.Int64 // when the test saw RemovingDriver, in UnixNano; 0 before
	var admitted atomic.Int64
	// The pods admitted though asked for after the fence was proved, with when they were asked
	// for: the fence stays up until the driver is gone and settleTime after.
	var mu sync.Mutex
	var afterProof []string
	var afterProofAsked []int64
	refused := make([]atomic.Int64, len(writers))
	racing, stopRacing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w, j := range writers {
		wg.Go(func() {
			namespace := layout.namespace(j)
			for i := 0; racing.Err() == nil; i++ {
				_, claim := layout.at(layout.in(j, rand.IntN(layout.count(j))))
				pod := fixture.PodUsing(namespace, fmt.Sprintf("writer-%d", i), claim)
				asked := time.Now().UnixNano()
				switch err := h.c.Create(racing, pod); {
				case err == nil:
					admitted.Add(1)
					if proved := fenceProved.Load(); proved != 0 && asked > proved {
						mu.Lock()
						afterProof = append(afterProof, fmt.Sprintf("%s/%s on claim %s", namespace, pod.Name, claim))
						afterProofAsked = append(afterProofAsked, asked)
						mu.Unlock()
					}
					_ = deletePodNow(racing, h.c, namespace, pod.Name)
				case operator.RefusedByRemovalFence(err):
					refused[w].Add(1)
				case racing.Err() == nil:
					t.Errorf("creating pod %s/%s: %v", namespace, pod.Name, err)
				}
				// Quiet spells now and then let a look find no pod, as it must for the removal
				// to go on; an app that never pauses holds a removal back for good.
				pause := time.Duration(rand.IntN(50)) * time.Millisecond
				if i%20 == 19 {
					pause = time.Second
				}
				time.Sleep(pause)
			}
		})
	}
	asked := time.Now()
	h.setState(ctx, operatorv1.Removed)
	must(t, eventually(ctx, "the removal under way", func(ctx context.Context) error {
		err := h.conditionWith("AWSEFSDriverUninstallProgressing", operatorv1.ConditionTrue, "RemovingDriver")(ctx)
		if err == nil {
			fenceProved.CompareAndSwap(0, time.Now().UnixNano())
		}
		return err
	}))
	removing := time.Now()
	fences, err := h.removalFences(ctx)
	must(t, err)
	must(t, eventually(ctx, "the driver removed", h.operandsGone))
	removed := time.Now()
	// The writers keep going until the lifecycle reports the removal done and the fence down.
	must(t, eventually(ctx, "the Removed condition", h.conditionWith("AWSEFSDriverUninstallProgressing", operatorv1.ConditionFalse, "DriverRemoved")))
	stopRacing()
	wg.Wait()
	must(t, eventually(ctx, "the fence's parameters gone", h.fencesGone))

	late := 0
	for i, at := range afterProofAsked {
		if at < removed.UnixNano() {
			late++
			t.Errorf("pod %s admitted while the fence was up, %s after it was proved", afterProof[i], time.Duration(at-fenceProved.Load()).Round(time.Millisecond))
		}
	}
	// The driver is gone, so each of its objects' deletions has a verdict coming: at the field's
	// size judging one lists 100,000 PersistentVolumes, which a slow machine may still be doing.
	violations, deletions, err := dw.verdicts(ctx, driverObjects...)
	must(t, err)
	for _, v := range violations {
		t.Errorf("the driver was deleted under a volume in use: %s", v)
	}
	if deletions == 0 {
		t.Error("no deletion of a driver object was judged")
	}
	var total int64
	for w, j := range writers {
		n := refused[w].Load()
		total += n
		if n == 0 {
			t.Errorf("no pod was refused in namespace %s (%d claims): the fence did not reach it", layout.namespace(j), layout.count(j))
		}
	}
	t.Logf("%d claims over %d namespaces (%d in %s), %d RemovalFences: Removed to RemovingDriver %s, to the driver gone %s; "+
		"%d pods refused in %d namespaces, %d admitted before the fence held, %d while it held; %d deletions judged",
		layout.claims, layout.namespaces, layout.first, layout.namespace(0), len(fences),
		removing.Sub(asked).Round(10*time.Millisecond), removed.Sub(asked).Round(10*time.Millisecond),
		total, len(writers), admitted.Load()-int64(len(afterProof)), late, deletions)
}

// BenchmarkRemovalAtScale measures, with the operator binary and 1,000 or 100,000 EFS claims
// (fieldScale's shape), the time from the last pod on an EFS volume being deleted to the node
// DaemonSet being deleted (the fence raised, proved and settled on the way), and the operator's
// resident memory while the removal waits for that pod and at its peak. Each iteration makes the
// driver Managed again and starts another pod.
func BenchmarkRemovalAtScale(b *testing.B) {
	for _, layout := range []claimLayout{shortScale, fieldScale} {
		b.Run(fmt.Sprintf("claims=%d", layout.claims), func(b *testing.B) {
			bin := buildOperator(b)
			h := newHarness(b, testbed.APIServer, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
			ctx, cancel := progress.WithStall(context.Background(), 30*time.Minute)
			defer cancel()
			layout.create(ctx, b, h.stack.Config)
			app := layout.namespace(0)
			must(b, h.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "default"}}))
			proc := h.startOperatorAsAdmin(bin)
			h.createCR(ctx, efs.CRName, operatorv1.Managed)
			_, claim := layout.at(0)
			var seconds, waiting []float64
			for i := 0; i < b.N; i++ {
				h.setState(ctx, operatorv1.Managed)
				must(b, h.waitAll(ctx, manualModeOperands()))
				pod := fixture.PodUsing(app, fmt.Sprintf("app-%d", i), claim)
				must(b, h.c.Create(ctx, pod))
				h.setState(ctx, operatorv1.Removed)
				must(b, eventually(ctx, "the removal waiting for the pod", h.conditionWith("AWSEFSDriverUninstallDegraded", operatorv1.ConditionTrue, "VolumesInUse")))
				time.Sleep(5 * time.Second)
				waiting = append(waiting, float64(testbed.RSS(proc.cmd.Process.Pid))/(1<<20))
				daemonSets, err := h.kube.AppsV1().DaemonSets(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + efs.NodeDaemonSet})
				must(b, err)
				start := time.Now()
				must(b, deletePodNow(ctx, h.c, app, pod.Name))
				deleted := false
				for ev := range daemonSets.ResultChan() {
					obj, ok := ev.Object.(metav1.Object)
					if ev.Type == watch.Deleted || (ok && obj.GetDeletionTimestamp() != nil) {
						deleted = true
						break
					}
				}
				daemonSets.Stop()
				if !deleted {
					b.Fatal("the watch of the node DaemonSet ended before its deletion")
				}
				seconds = append(seconds, time.Since(start).Seconds())
				must(b, eventually(ctx, "the Removed condition", h.conditionWith("AWSEFSDriverUninstallProgressing", operatorv1.ConditionFalse, "DriverRemoved")))
			}
			// Where the time goes: the fence's writes and when the API server enforced them.
			for _, line := range strings.Split(proc.output(), "\n") {
				if strings.Contains(line, "removal fence: ") {
					b.Log(line)
				}
			}
			b.ReportMetric(testutil.Median(seconds), "pod-gone-to-driver-deleted-s")
			b.ReportMetric(testutil.Median(waiting), "waiting-rss-MiB")
			b.ReportMetric(float64(testbed.PeakRSS(proc.cmd.Process.Pid))/(1<<20), "peak-rss-MiB")
			b.ReportMetric(0, "ns/op")
		})
	}
}
