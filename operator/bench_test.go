package operator_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// waitAll waits until every object exists, polling every 20ms, and returns when the last appeared.
func (h *harness) waitAll(ctx context.Context, objects []client.Object) error {
	for _, obj := range objects {
		err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			return h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj) == nil, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// BenchmarkCRToOperands measures, on the API-server stack, the time from creating the
// ClusterCSIDriver to every operand object being applied. Each iteration deletes the CR (no
// volumes, so the driver is removed) and creates it again.
func BenchmarkCRToOperands(b *testing.B) {
	fixture.SetOperatorEnv(b)
	h := newHarness(b, testbed.APIServer, testbed.OpenShiftOptions{})
	h.runOperator()
	ctx, cancel := progress.WithStall(context.Background(), 10*time.Minute)
	defer cancel()
	var seconds []float64
	for i := 0; i < b.N; i++ {
		start := time.Now()
		h.createCR(ctx, efs.CRName, operatorv1.Managed)
		must(b, h.waitAll(ctx, operands()))
		seconds = append(seconds, time.Since(start).Seconds())

		cr, err := h.cr(ctx)
		must(b, err)
		must(b, h.c.Delete(ctx, cr))
		for _, obj := range operands() {
			must(b, eventually(ctx, "removal", h.gone(obj)))
		}
		must(b, eventually(ctx, "the CR to go", func(ctx context.Context) error {
			if _, err := h.cr(ctx); err == nil {
				return fmt.Errorf("CR still there")
			}
			return nil
		}))
	}
	b.ReportMetric(testutil.Median(seconds), "cr-to-operands-s")
	b.ReportMetric(0, "ns/op")
}

// createUnrelated creates n PersistentVolumes (of another driver), n PersistentVolumeClaims, n
// ConfigMaps and n Pods using those claims, in namespaces the operator does not run in.
func createUnrelated(ctx context.Context, b *testing.B, config *rest.Config, n int) {
	fast := rest.CopyConfig(config)
	fast.QPS, fast.Burst = 5000, 5000
	kube := kubernetes.NewForConfigOrDie(fast)
	for i := range 10 {
		name := fmt.Sprintf("unrelated-%d", i)
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		must(b, err)
		// No controller manager runs to create it, and pods are admitted only with it.
		_, err = kube.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		must(b, err)
	}
	must(b, testutil.Parallel(n, func(i int) error {
		ns := fmt.Sprintf("unrelated-%d", i%10)
		name := fmt.Sprintf("obj-%05d", i)
		_, err1 := kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: "other.csi.example.com", VolumeHandle: name,
				}},
			},
		}, metav1.CreateOptions{})
		_, err2 := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: ptr.To("other"),
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}, metav1.CreateOptions{})
		_, err3 := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"payload": name},
		}, metav1.CreateOptions{})
		// A pod of an app that uses its claim, as most pods of a busy cluster do not: the
		// operator must not watch it unless a removal waits for pods.
		_, err4 := kube.CoreV1().Pods(ns).Create(ctx, fixture.PodUsing(ns, name, name), metav1.CreateOptions{})
		return errors.Join(err1, err2, err3, err4)
	}))
}

// BenchmarkOperatorRSSWithUnrelatedObjects runs the operator binary with the driver installed,
// records its resident memory when idle, then after 10,000 unrelated PVs, PVCs, ConfigMaps and
// Pods were created, and reports the ratio (goal ≤ 1.3: informers are scoped to what the operator
// manages). Each iteration forces a full resync before sampling.
func BenchmarkOperatorRSSWithUnrelatedObjects(b *testing.B) {
	bin := buildOperator(b)
	h := newHarness(b, testbed.APIServer, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, cancel := progress.WithStall(context.Background(), 20*time.Minute)
	defer cancel()
	proc := h.startOperatorAsAdmin(bin)
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	must(b, h.waitAll(ctx, manualModeOperands()))
	rss := func() float64 {
		time.Sleep(5 * time.Second)
		return float64(testbed.RSS(proc.cmd.Process.Pid)) / (1 << 20)
	}
	idle := rss()
	start := time.Now()
	createUnrelated(ctx, b, h.stack.Config, 10000)
	b.Logf("created 40,000 unrelated objects in %s", time.Since(start).Round(time.Second))
	var loaded []float64
	for i := 0; i < b.N; i++ {
		// Touch the CR so that every controller syncs again.
		cr, err := h.cr(ctx)
		must(b, err)
		patch := client.MergeFrom(cr.DeepCopy())
		cr.Annotations = map[string]string{"bench": fmt.Sprint(i)}
		must(b, h.c.Patch(ctx, cr, patch))
		loaded = append(loaded, rss())
	}
	if err := proc.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		b.Fatalf("the operator died under load: %v", err)
	}
	b.ReportMetric(idle, "idle-rss-MiB")
	b.ReportMetric(testutil.Median(loaded), "loaded-rss-MiB")
	b.ReportMetric(testutil.Median(loaded)/idle, "rss-ratio")
	b.ReportMetric(0, "ns/op")
}
