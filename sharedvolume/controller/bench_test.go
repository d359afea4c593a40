package controller_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// waitCount polls until count() reaches want.
func waitCount(ctx context.Context, what string, want int, count func(context.Context) (int, error)) error {
	return eventually(ctx, what, func(ctx context.Context) error {
		got, err := count(ctx)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%d of %d", got, want)
		}
		return nil
	})
}

// BenchmarkSharedVolumes measures the controller, as the operator binary runs it:
//   - baseline: a plain client with no rate limit creates 1,000 pre-bound PVs and PVCs, and the
//     controller-manager binds them;
//   - controller: 1,000 SharedVolumes created at once, until all are Ready (their PVs and PVCs
//     created and bound the same way);
//   - the operator's RSS with the 1,000 SharedVolumes, then with 10,000 unrelated PVCs too.
//
// One measurement per run: each needs a fresh cluster of its size.
func BenchmarkSharedVolumes(b *testing.B) {
	const n = 1000
	bin := testutil.BuildBinary(b, "github.com/csi-olm/csi-olm/cmd/aws-efs-csi-driver-operator")
	bd := newBed(b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	must(b, bd.stack.InstallOpenShift(ctx, testbed.OpenShiftOptions{}))
	for _, ns := range []string{"baseline", "svs", "unrelated", "openshift-cluster-csi-drivers"} {
		bd.namespace(ctx, ns, nil)
	}
	fastConfig := rest.CopyConfig(bd.stack.Config)
	fastConfig.QPS, fastConfig.Burst = 10000, 10000
	fast, err := client.New(fastConfig, client.Options{Scheme: testbed.Scheme})
	must(b, err)
	bound := func(ns string) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			var list corev1.PersistentVolumeClaimList
			if err := bd.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return 0, err
			}
			c := 0
			for _, pvc := range list.Items {
				if pvc.Status.Phase == corev1.ClaimBound {
					c++
				}
			}
			return c, nil
		}
	}

	start := time.Now()
	must(b, testutil.Parallel(n, func(i int) error {
		v := sv("baseline", fmt.Sprintf("v%04d", i), "fs-01", fmt.Sprintf("fsap-%04x", i))
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("baseline-%04d", i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "efs-sc",
				ClaimRef: &corev1.ObjectReference{Namespace: "baseline", Name: v.Name},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: "efs.csi.aws.com", VolumeHandle: v.Spec.FileSystemID + "::" + v.Spec.AccessPointID,
				}},
			},
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "baseline", Name: v.Name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClassName: ptr.To("efs-sc"), VolumeName: pv.Name,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		if err := fast.Create(ctx, pv); err != nil {
			return err
		}
		return fast.Create(ctx, pvc)
	}))
	must(b, waitCount(ctx, "baseline claims bound", n, bound("baseline")))
	baseline := time.Since(start)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	op := exec.Command(bin, "start", "--kubeconfig", bd.stack.Kubeconfig, "--namespace", "openshift-cluster-csi-drivers",
		"--listen", "127.0.0.1:"+strconv.Itoa(port), "--disable-leader-election")
	op.Env = append(os.Environ(), testbed.MarkerEnv+"="+bd.stack.Dir)
	op.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(b, op.Start())
	b.Cleanup(func() { _ = op.Process.Kill(); _ = op.Wait() })
	time.Sleep(5 * time.Second) // informers synced, idle

	start = time.Now()
	must(b, testutil.Parallel(n, func(i int) error {
		return fast.Create(ctx, sv("svs", fmt.Sprintf("v%04d", i), "fs-01", fmt.Sprintf("fsap-%04x", i)))
	}))
	must(b, waitCount(ctx, "SharedVolumes Ready", n, func(ctx context.Context) (int, error) {
		var list v1alpha1.SharedVolumeList
		if err := bd.c.List(ctx, &list, client.InNamespace("svs")); err != nil {
			return 0, err
		}
		c := 0
		for _, v := range list.Items {
			if v.Status.Phase == v1alpha1.SharedVolumeReady {
				c++
			}
		}
		return c, nil
	}))
	controllerTime := time.Since(start)
	time.Sleep(5 * time.Second)
	rssSVs := float64(testbed.RSS(op.Process.Pid)) / (1 << 20)

	must(b, testutil.Parallel(10*n, func(i int) error {
		return fast.Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "unrelated", Name: fmt.Sprintf("pvc-%05d", i)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: ptr.To("other"),
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		})
	}))
	time.Sleep(10 * time.Second)
	rssUnrelated := float64(testbed.RSS(op.Process.Pid)) / (1 << 20)

	b.ReportMetric(baseline.Seconds(), "baseline-s")
	b.ReportMetric(controllerTime.Seconds(), "controller-s")
	b.ReportMetric(baseline.Seconds()/controllerTime.Seconds(), "throughput-ratio")
	b.ReportMetric(rssSVs, "rss-1000sv-MiB")
	b.ReportMetric(rssUnrelated, "rss-plus-10k-pvcs-MiB")
	b.ReportMetric(0, "ns/op")
}
