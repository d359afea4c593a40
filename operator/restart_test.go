package operator_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

func buildOperator(t testing.TB) string {
	return testutil.BuildBinary(t, "github.com/csi-olm/csi-olm/cmd/aws-efs-csi-driver-operator")
}

// startOperatorProcess runs the operator binary against the stack, as its Deployment would.
func (h *harness) startOperatorProcess(bin string) *exec.Cmd {
	h.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "start", "--kubeconfig", h.stack.Kubeconfig, "--namespace", ns,
		"--listen", "127.0.0.1:"+strconv.Itoa(port), "--disable-leader-election")
	cmd.Env = append(os.Environ(), "OPERATOR_NAME="+efs.OperatorName, testbed.MarkerEnv+"="+h.stack.Dir)
	for env, image := range fixture.Images {
		cmd.Env = append(cmd.Env, env+"="+image)
	}
	logFile, err := os.Create(filepath.Join(h.stack.Dir, "logs", fmt.Sprintf("operator-%d.log", time.Now().UnixNano())))
	if err != nil {
		h.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})
	return cmd
}

// TestRestartMidInstallConverges kills the operator process while it installs the driver and
// expects a new one to finish the job.
func TestRestartMidInstallConverges(t *testing.T) {
	bin := buildOperator(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	first := h.startOperatorProcess(bin)
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	must(t, eventually(ctx, "the install to start", h.exists(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "efs.csi.aws.com"}})))
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	h.startOperatorProcess(bin)
	for _, obj := range operands()[:len(operands())-1] {
		must(t, eventually(ctx, "operand "+obj.GetName(), h.exists(obj)))
	}
	must(t, eventually(ctx, "node DaemonSet available", h.available(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}})))
	must(t, eventually(ctx, "controller Deployment available", h.available(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller"}})))
	for _, c := range []string{"AWSEFSDriverControllerServiceControllerAvailable", "AWSEFSDriverNodeServiceControllerAvailable"} {
		must(t, eventually(ctx, c, h.conditionIs(c, operatorv1.ConditionTrue)))
	}
}
