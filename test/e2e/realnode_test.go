package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// realNode is the one real-node stack of this test binary: a machine runs one real node, so
// every test that needs one shares it, and TestMain stops it.
var realNode struct {
	sync.Mutex
	stack *testbed.Stack
	// started says a real node ran, so TestMain checks the host was put back.
	started bool
}

// realNodeOptions are the shared stack's options; its logs go to stderr, not to the test that
// happens to start it, which it outlives.
func realNodeOptions(t *testing.T, level testbed.Level, dir string) testbed.Options {
	t.Helper()
	requireRealNodeProcess(t)
	tools, err := testutil.TestBedTools()
	if err != nil {
		t.Fatal(err)
	}
	// One registry for the run's real nodes: the release the first flow publishes serves them all.
	opts := testbed.Options{Level: level, RealNode: true, Tools: tools, Dir: dir, RegistryStorage: filepath.Join(runDir, "registry")}
	if testing.Verbose() {
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	return opts
}

// requireRealNodeProcess fails a test that would start a real node in a process that must not.
func requireRealNodeProcess(t *testing.T) {
	t.Helper()
	if os.Getenv(noRealNodeEnv) != "" {
		t.Fatalf("%s is set: this process runs no real node; add the test to E2E_REAL_NODE_TESTS in the Makefile", noRealNodeEnv)
	}
}

// startRealNode returns the shared real-node stack, starting it when none runs. A failed test
// prints the tails of its components' logs.
func startRealNode(t *testing.T) *testbed.Stack {
	t.Helper()
	realNode.Lock()
	defer realNode.Unlock()
	if realNode.stack == nil {
		ctx, cancel := progress.WithStall(context.Background(), flowStall)
		defer cancel()
		dir, err := os.MkdirTemp(runDir, "realnode-")
		if err != nil {
			t.Fatal(err)
		}
		realNode.started = true
		s, err := testbed.Start(ctx, realNodeOptions(t, testbed.OLM, dir))
		if err != nil {
			if s != nil {
				t.Logf("real node logs (full logs in %s):\n%s", filepath.Join(dir, "logs"), s.LogTails(8))
			}
			t.Fatalf("starting the real node: %v", err)
		}
		realNode.stack = s
	}
	s := realNode.stack
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("real node logs (full logs in %s):\n%s", filepath.Join(s.Dir, "logs"), s.LogTails(8))
		}
	})
	return s
}

// stopRealNode stops the shared real node, if one runs.
func stopRealNode() {
	realNode.Lock()
	defer realNode.Unlock()
	if realNode.stack != nil {
		realNode.stack.Stop()
		realNode.stack = nil
	}
}

// TestRealNode proves the node: Ready, contained (no route out of its namespace, a pod's
// connection outside fails at once), and running a pod from the stack's registry that reaches
// the API server through the kubernetes Service and cluster DNS, with its log read back through
// kubelet.
func TestRealNode(t *testing.T) {
	s := startRealNode(t)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()

	var node corev1.Node
	if err := s.Client.Get(ctx, client.ObjectKey{Name: testbed.RealNodeName}, &node); err != nil {
		t.Fatal(err)
	}
	if node.Labels[testbed.RealNodeLabel] != "true" {
		t.Errorf("node %s has labels %v, want %s=true", node.Name, node.Labels, testbed.RealNodeLabel)
	}
	for _, family := range []string{"-4", "-6"} {
		out, err := exec.Command("ip", family, "-n", s.Netns(), "route", "show", "default").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			t.Errorf("ip %s route show default in %s = %q, %v; want no default route", family, s.Netns(), out, err)
		}
	}
	links, err := exec.Command("ip", "-n", s.Netns(), "-o", "link", "show", "type", "veth").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(links)), "\n") {
		// Every veth in the namespace is a pod's, with its peer in that pod's namespace.
		if line != "" && !strings.Contains(line, "master cni0") {
			t.Errorf("a veth in %s is not on the pods' bridge: %s", s.Netns(), line)
		}
	}

	// One real node per machine: a second is refused, and the first keeps running.
	if second, err := testbed.Start(ctx, realNodeOptions(t, testbed.Full, t.TempDir())); err == nil || !strings.Contains(err.Error(), "a real node is already running on this machine") {
		if second != nil {
			second.Stop()
		}
		t.Errorf("a second real node: %v, want a refusal", err)
	}

	const ref = "quay.io/csi-olm-test/netprobe:e2e"
	probe, err := os.ReadFile(testutil.BuildStatic(t, "github.com/csi-olm/csi-olm/test/e2e/netprobe", "amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PushBinaryImage(ctx, ref, testbed.BinaryImage{Binary: probe, Paths: []string{"/bin/netprobe"}}); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "realnode-probe"}}
	if err := s.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// 192.0.2.1 is TEST-NET-1 (RFC 5737): nothing answers there, and with no route nothing is sent.
	targets := []string{"10.96.0.1:443", "kubernetes.default.svc.cluster.local:443", "192.0.2.1:80"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "netprobe"},
		Spec: corev1.PodSpec{
			NodeName:   testbed.RealNodeName,
			Containers: []corev1.Container{{Name: "netprobe", Image: ref, Args: targets}},
		},
	}
	if err := s.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	clientset := kubernetes.NewForConfigOrDie(s.Config)
	var log string
	if err := testutil.Eventually(ctx, "the netprobe pod's report", func(ctx context.Context) error {
		raw, err := clientset.CoreV1().Pods(ns.Name).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return err
		}
		if log = string(raw); !strings.Contains(log, "done") {
			return fmt.Errorf("the report so far: %q", log)
		}
		return nil
	}); err != nil {
		var got corev1.Pod
		_ = s.Client.Get(ctx, client.ObjectKeyFromObject(pod), &got)
		t.Fatalf("%v\npod status: %+v", err, got.Status)
	}
	for _, want := range []string{"10.96.0.1:443 ok", "kubernetes.default.svc.cluster.local:443 ok", "192.0.2.1:80 error: dial tcp 192.0.2.1:80: connect: network is unreachable"} {
		if !strings.Contains(log, want) {
			t.Errorf("the pod's report lacks %q:\n%s", want, log)
		}
	}
}

// crashDirEnv tells the test binary, run again by TestRealNodeUndoneAfterACrash, to start a
// real node there and die by SIGKILL with it running.
const crashDirEnv = "CSI_OLM_E2E_CRASH_DIR"

// TestRealNodeUndoneAfterACrash kills a process while its real node runs a pod, as a test
// timeout or a developer's ^\ does, and checks that the host changes it leaves (network
// namespaces, cgroups, mounts, the running container) are all undone by the next start, here
// testbed.UndoAbandonedNode, which the next real node's start and `csi-olm dev down` run.
func TestRealNodeUndoneAfterACrash(t *testing.T) {
	if os.Getenv(crashDirEnv) != "" {
		crashWithARealNode(t)
		return
	}
	stopRealNode() // one real node per machine
	before, err := testbed.HostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "crashed")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealNodeUndoneAfterACrash$", "-test.v")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL || !strings.Contains(string(out), "pod running, crashing") {
		t.Fatalf("the crashing run ended with %v, not SIGKILL with its pod running:\n%s", err, tailLines(string(out), 30))
	}
	// The crashed run's own processes (containerd, kubelet...) die from their parent-death
	// signal a moment after it; until they are gone the node is rightly still in use.
	waitForNoSurvivors(dir, 10*time.Second)
	left, err := testbed.HostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(before, left) {
		t.Fatal("the crashed node left nothing behind: the test proves nothing")
	}
	if err := testbed.UndoAbandonedNode(t.Logf); err != nil {
		t.Fatal(err)
	}
	after, err := testbed.HostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the host is not as before the crashed node (-before +after):\n%s", diff)
	}
	if pids := testbed.Survivors(dir); len(pids) > 0 {
		t.Errorf("processes of the crashed node survived: %v", pids)
	}
}

// crashWithARealNode starts a real node, runs a pod on it, and SIGKILLs its own process.
func crashWithARealNode(t *testing.T) {
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	s, err := testbed.Start(ctx, realNodeOptions(t, testbed.Full, os.Getenv(crashDirEnv)))
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sleeper"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: testbed.PauseImage}}},
	}
	if err := s.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Eventually(ctx, "the pod running", func(ctx context.Context) error {
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", pod.Status.Phase)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("pod running, crashing")
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
}
