package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/release"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestCLIImageOnRealNode runs the csi-olm image a release publishes, as tools.txt pins it, on the
// real node's containerd, as a pipeline runs it: catalogs mounted at the image's working
// directory, a verb per pod, the verdict in the container's exit status.
func TestCLIImageOnRealNode(t *testing.T) {
	s := startRealNode(t)
	p := publish(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	tools, err := os.ReadFile(filepath.Join(p.dir, release.ToolsFile))
	if err != nil {
		t.Fatal(err)
	}
	image, ok := strings.CutPrefix(strings.TrimSpace(string(tools)), "csi-olm ")
	if !ok {
		t.Fatalf("%s: %q, want the csi-olm image", release.ToolsFile, tools)
	}

	// The catalogs a pipeline would check out: the committed certified catalogs of two minors,
	// and the synthetic catalog without the one that provides its dependencies. The image runs
	// as a non-root user, so what it reads is readable by all.
	work := filepath.Join(t.TempDir(), "work")
	for dir, from := range map[string]string{"v4.10": "../../catalog/certified/v4.10", "v4.11": "../../catalog/certified/v4.11"} {
		if err := os.CopyFS(filepath.Join(work, dir), os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
	}
	if err := synthcatalog.Write(filepath.Join(work, "synthetic")); err != nil {
		t.Fatal(err)
	}
	if err := filepath.Walk(work, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	}); err != nil {
		t.Fatal(err)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csi-olm-cli"}}
	if err := s.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// The pods mount a directory of the test's: the namespace, and they with it, go before it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := s.Client.Delete(ctx, ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
			return
		}
		if err := testutil.Eventually(ctx, "namespace "+ns.Name+" gone", func(ctx context.Context) error {
			err := s.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		}); err != nil {
			t.Error(err)
		}
	})
	clientset := kubernetes.NewForConfigOrDie(s.Config)
	for i, tc := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"catalog", "validate", "v4.11"}, exitcode.OK, "0 errors"},
		{[]string{"catalog", "diff", "--breaking", "v4.11", "v4.10"}, exitcode.Findings, "breaking"},
		{[]string{"catalog", "simulate", "--all", "synthetic"}, exitcode.Findings, "ResolutionFailed"},
		{[]string{"catalog", "validate", "absent"}, exitcode.Failure, "no such directory"},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("csi-olm-%d", i)},
			Spec: corev1.PodSpec{
				NodeName:      testbed.RealNodeName,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "csi-olm", Image: image, Args: tc.args,
					SecurityContext: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)},
					VolumeMounts:    []corev1.VolumeMount{{Name: "work", MountPath: images.CLIWorkDir, ReadOnly: true}},
				}},
				Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: work}}}},
			},
		}
		if err := s.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		var got corev1.Pod
		if err := testutil.Eventually(ctx, "csi-olm "+strings.Join(tc.args, " ")+" to end", func(ctx context.Context) error {
			if err := s.Client.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
				return err
			}
			if got.Status.Phase != corev1.PodSucceeded && got.Status.Phase != corev1.PodFailed {
				return fmt.Errorf("phase %s", got.Status.Phase)
			}
			return nil
		}); err != nil {
			t.Fatalf("%v\npod status: %+v", err, got.Status)
		}
		log, err := clientset.CoreV1().Pods(ns.Name).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var code int32 = -1
		if cs := got.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
			code = cs[0].State.Terminated.ExitCode
		}
		if int(code) != tc.want || !strings.Contains(string(log), tc.says) {
			t.Errorf("csi-olm %s in the image: exit %d, want %d, and a report saying %q:\n%s", strings.Join(tc.args, " "), code, tc.want, tc.says, log)
		}
	}
}
