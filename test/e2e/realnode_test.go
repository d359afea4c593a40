package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/images/build"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// realNode is the one real-node stack of this test binary: a machine runs one real node, so
// every test that needs one shares it, and TestMain stops it.
var realNode struct {
	once  sync.Once
	stack *testbed.Stack
	err   error
}

// startRealNode returns the shared real-node stack, starting it on first use. A failed test
// prints the tails of its components' logs.
func startRealNode(t *testing.T) *testbed.Stack {
	t.Helper()
	realNode.once.Do(func() {
		tools, err := testutil.TestBedTools()
		if err != nil {
			realNode.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		opts := testbed.Options{Level: testbed.OLM, RealNode: true, Tools: tools, Dir: filepath.Join(runDir, "realnode")}
		// The stack outlives the test that starts it: it logs to stderr, not to that test.
		if testing.Verbose() {
			opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
		}
		realNode.stack, realNode.err = testbed.Start(ctx, opts)
	})
	if s := realNode.stack; s != nil {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("real node logs (full logs in %s):\n%s", filepath.Join(s.Dir, "logs"), s.LogTails(8))
			}
		})
	}
	if realNode.err != nil {
		t.Fatalf("starting the real node: %v", realNode.err)
	}
	return realNode.stack
}

func stopRealNode() {
	if realNode.stack != nil {
		realNode.stack.Stop()
	}
}

// pushBinaryImage pushes an image holding one statically linked binary as its entrypoint.
func pushBinaryImage(t *testing.T, s *testbed.Stack, ref, binary string) {
	t.Helper()
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	platform, err := build.StaticPlatform(binary, data)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := build.Layer([]build.File{{Path: "/bin/" + filepath.Base(binary), Mode: 0o755, Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := build.Image(nil, build.Config{Entrypoint: []string{"/bin/" + filepath.Base(binary)}, User: "65532", Platform: platform}, layer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RegistryClient().Push(context.Background(), ref, img); err != nil {
		t.Fatal(err)
	}
}

// TestRealNode proves the node: Ready, contained (no route out of its namespace, a pod's
// connection outside fails at once), and running a pod from the stack's registry that reaches
// the API server through the kubernetes Service and cluster DNS, with its log read back through
// kubelet.
func TestRealNode(t *testing.T) {
	s := startRealNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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

	const ref = "quay.io/csi-olm-test/netprobe:e2e"
	pushBinaryImage(t, s, ref, testutil.BuildStatic(t, "github.com/csi-olm/csi-olm/test/e2e/netprobe", "amd64"))
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
