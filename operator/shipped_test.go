package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestOperatorRunsAsItsCSVShipsIt runs the operator binary with the newest CSV's args and env,
// as its ServiceAccount with exactly the CSV's permissions. Only what a pod gets from its
// surroundings is added: the credentials in-cluster configuration would find, the namespace it
// would read from the token's directory, and a loopback port for the metrics server, which a pod
// binds in its own network namespace. The operator must start, stay up, never be refused, and
// work: put a driver in place for a ClusterCSIDriver, and the SharedVolume finalizer policy up.
func TestOperatorRunsAsItsCSVShipsIt(t *testing.T) {
	h, ctx, start := newShipped(t)
	// The bundle ships the SharedVolume CRD, which OLM installs before the operator.
	svCRD, err := testbed.DecodeCRD(crd.SharedVolumes)
	must(t, err)
	must(t, testbed.InstallCRDs(ctx, h.c, svCRD))

	p, _ := start()
	alive := func(what string) {
		t.Helper()
		select {
		case <-p.exited:
			t.Fatalf("%s: the operator exited (%v):\n%s", what, p.err, tail(p.output(), 30))
		default:
		}
	}

	// Both defects that shipped once (klog's -v not registered; the metrics server's
	// authentication ConfigMap not granted) ended the process within seconds of its start.
	select {
	case <-p.exited:
		t.Fatalf("the operator exited at start (%v):\n%s", p.err, tail(p.output(), 30))
	case <-time.After(10 * time.Second):
	}
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	h.actAsCloudCredentialOperator(ctx)
	for _, obj := range operands() {
		if err := eventually(ctx, "operand "+obj.GetName(), h.exists(obj)); err != nil {
			alive("installing the driver")
			t.Fatalf("%v\n%s", err, tail(p.output(), 30))
		}
	}
	// The SharedVolume finalizer policy is up, bound to what OLM made for the CSV, and gives a
	// new SharedVolume its finalizer (a dry run goes through admission and stores nothing).
	must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}))
	must(t, eventually(ctx, "a SharedVolume admitted with its finalizer", func(ctx context.Context) error {
		sv := &sharedvolumev1alpha1.SharedVolume{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"},
			Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123abcd", AccessPointID: "fsap-0123abcd"},
		}
		if err := h.c.Create(ctx, sv, client.DryRunAll); err != nil {
			return err
		}
		if !slices.Contains(sv.Finalizers, efs.SharedVolumeFinalizer) {
			return fmt.Errorf("admitted with finalizers %q", sv.Finalizers)
		}
		return nil
	}))
	// What fails late fails within the first resyncs: the metrics server's authentication
	// ConfigMap, leader election renewals.
	time.Sleep(15 * time.Second)
	alive("15 s after the install")
	for _, line := range strings.Split(p.output(), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("the operator was refused something its CSV should grant: %s", line)
		}
	}
}

// newShipped is a fresh API server and a way to start the operator binary on it as the newest
// CSV ships it: its args and env, with exactly its permissions. Only what a pod gets from its
// surroundings is added: the credentials in-cluster configuration would find, the namespace,
// and a loopback port for the metrics server, which start returns.
func newShipped(t *testing.T) (h *harness, ctx context.Context, start func() (*process, string)) {
	t.Helper()
	bin := buildOperator(t)
	h = newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{})
	ctx, cancel := progress.WithStall(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	kubeconfig := fixture.WriteKubeconfig(t, h.grantBundlePermissions(ctx), ns)
	args, env := fixture.ShippedCommand(t, ns)
	return h, ctx, func() (*process, string) {
		t.Helper()
		addr := testutil.FreeLoopbackAddr(t)
		return h.startProcess(bin, append(slices.Clone(args), "--kubeconfig", kubeconfig, "--namespace", ns, "--listen", addr), env), addr
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
