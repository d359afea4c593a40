package operator_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

func buildOperator(t testing.TB) string {
	return testutil.BuildBinary(t, "github.com/csi-olm/csi-olm/cmd/aws-efs-csi-driver-operator")
}

// process is a binary (the operator's, or a sidecar's) running against the stack.
type process struct {
	cmd *exec.Cmd
	log string
	// exited is closed when the process ended; err is how.
	exited chan struct{}
	err    error
}

// output is what the process printed so far.
func (p *process) output() string {
	raw, _ := os.ReadFile(p.log)
	return string(raw)
}

// kill SIGKILLs the process and waits until it has ended.
func (p *process) kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.exited
	return nil
}

// startProcess runs a binary with args and with env as its only environment
// (besides PATH and TMPDIR), logging into the stack's logs; it is killed when the test ends.
// TMPDIR is the test's own: the operator writes its TLS serving config into a temporary
// directory, which a container's end removes and a test process's does not.
func (h *harness) startProcess(bin string, args, env []string) *process {
	h.t.Helper()
	tmp := h.t.TempDir()
	p := &process{
		cmd:    exec.Command(bin, args...),
		log:    filepath.Join(h.stack.Dir, "logs", fmt.Sprintf("%s-%d.log", filepath.Base(bin), time.Now().UnixNano())),
		exited: make(chan struct{}),
	}
	logFile, err := os.Create(p.log)
	if err != nil {
		h.t.Fatal(err)
	}
	defer logFile.Close()
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, testbed.MarkerEnv + "=" + h.stack.Dir}, env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	h.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// startOperatorAsAdmin runs the operator binary as the cluster admin, with the images the
// bundle's Deployment hands it, and without leader election so that a restart after a SIGKILL
// does not wait for the dead process's lease to expire.
func (h *harness) startOperatorAsAdmin(bin string) *process {
	h.t.Helper()
	return h.startOperatorBinary(bin, "--disable-leader-election")
}

// startOperatorBinary runs the operator binary as the cluster admin, with the images the
// bundle's Deployment hands it and these extra arguments.
func (h *harness) startOperatorBinary(bin string, extra ...string) *process {
	h.t.Helper()
	env := []string{"OPERATOR_NAME=" + efs.OperatorName}
	for name, image := range fixture.Images {
		env = append(env, name+"="+image)
	}
	return h.startProcess(bin, append([]string{"start", "--kubeconfig", h.stack.Kubeconfig, "--namespace", ns,
		"--listen", testutil.FreeLoopbackAddr(h.t)}, extra...), env)
}

// restartBed builds the operator binary and starts a full stack for it in Manual credentials
// mode; its context ends when nothing has progressed for three minutes.
func restartBed(t *testing.T) (string, *harness, context.Context) {
	t.Helper()
	bin := buildOperator(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, cancel := progress.WithStall(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return bin, h, ctx
}

// TestRestartMidInstallConverges kills the operator process while it installs the driver and
// expects a new one to finish the job.
func TestRestartMidInstallConverges(t *testing.T) {
	bin, h, ctx := restartBed(t)

	first := h.startOperatorAsAdmin(bin)
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	must(t, eventually(ctx, "the install to start", h.exists(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "efs.csi.aws.com"}})))
	must(t, first.kill())

	h.startOperatorAsAdmin(bin)
	for _, obj := range manualModeOperands() {
		must(t, eventually(ctx, "operand "+obj.GetName(), h.exists(obj)))
	}
	must(t, eventually(ctx, "node DaemonSet available", h.available(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}})))
	must(t, eventually(ctx, "controller Deployment available", h.available(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller"}})))
	for _, c := range []string{"AWSEFSDriverControllerServiceControllerAvailable", "AWSEFSDriverNodeServiceControllerAvailable"} {
		must(t, eventually(ctx, c, h.conditionIs(c, operatorv1.ConditionTrue)))
	}
}

// TestRestartedOperatorRestoresAMissingOperandAtOnce restarts the operator after a completed
// install with the controller Deployment deleted meanwhile. The new process finds the adoption
// done and writes nothing, so the CR's informer sends no event after the gate opens; the
// operand controllers, which first looked while it was closed, must still be woken at once,
// not at a resync minutes later. The kill campaign found that stall (a minute after a kill).
func TestRestartedOperatorRestoresAMissingOperandAtOnce(t *testing.T) {
	bin, h, ctx := restartBed(t)
	first := h.startOperatorAsAdmin(bin)
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}}
	must(t, eventually(ctx, "the driver installed", h.available(deployment)))
	must(t, eventually(ctx, "adoption settled", h.conditionIs("AWSEFSDriverAdoptionProgressing", operatorv1.ConditionFalse)))
	must(t, first.kill())
	must(t, h.c.Delete(ctx, deployment))
	must(t, eventually(ctx, "the Deployment gone", h.gone(deployment)))

	begin := time.Now()
	h.startOperatorAsAdmin(bin)
	// Well under the operand controllers' resync: only a woken controller makes it in time.
	quick, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	must(t, eventually(quick, "the Deployment re-created by the restarted operator", h.exists(deployment)))
	t.Logf("re-created %v after the restart", time.Since(begin).Round(100*time.Millisecond))
}

// TestRestartedOperatorResumesARemoval kills the operator in the middle of a removal (a finalizer
// of the test's own holds the controller Deployment in deletion) and starts it again. The phase
// is in the CR's status, so the new process resumes the removal where it was: it never reports a
// phase before RemovingDriver again (it does not look for pods, raise and prove the fence anew),
// and the removal finishes.
func TestRestartedOperatorResumesARemoval(t *testing.T) {
	bin, h, ctx := restartBed(t)
	first := h.startOperatorAsAdmin(bin)
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	must(t, eventually(ctx, "the controller installed", h.exists(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}})))
	release := h.holdDeployment(ctx, t)
	h.setState(ctx, operatorv1.Removed)
	must(t, eventually(ctx, "the removal under way", h.conditionWith("AWSEFSDriverUninstallProgressing", operatorv1.ConditionTrue, "RemovingDriver")))
	must(t, first.kill())

	h.startOperatorAsAdmin(bin)
	begin := time.Now()
	// Seen for longer than the fence takes to be proved (a second): a removal started over
	// would report the phases before RemovingDriver meanwhile.
	var reasons []string
	for time.Since(begin) < 5*time.Second {
		cr, err := h.cr(ctx)
		must(t, err)
		if c := v1helpers.FindOperatorCondition(cr.Status.Conditions, "AWSEFSDriverUninstallProgressing"); c != nil && (len(reasons) == 0 || reasons[len(reasons)-1] != c.Reason) {
			reasons = append(reasons, c.Reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
	release()
	must(t, eventually(ctx, "the removal finished", h.conditionWith("AWSEFSDriverUninstallProgressing", operatorv1.ConditionFalse, "DriverRemoved")))
	if !slices.Equal(reasons, []string{"RemovingDriver"}) {
		t.Errorf("after the restart the lifecycle reported %v: it started the removal over instead of resuming it", reasons)
	}
}
