package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// The admin quick start of README.md and its sections, by heading. Every section with a block
// runs in one of the two flows below; a section added to the README without one fails the test.
const (
	adminQuickStart  = "Quick start: cluster admin"
	installSection   = "Install the operator (OLM v0)"
	driverSection    = "Start the driver"
	classSection     = "Dynamic provisioning: a StorageClass"
	sharedSection    = "Shared volumes for app teams: SharedVolume"
	switchSection    = "Coming from the community aws-efs-operator"
	uninstallSection = "Uninstall"
	quickStartNS     = "openshift-cluster-csi-drivers"
	quickStartAppNS  = "my-app"
	quickStartVolume = "data"
)

// readmeBlock is a fenced block of README.md: the section it is in and its language.
type readmeBlock struct {
	section, lang, text string
	line                int
}

// quickStartBlocks are the sh and yaml blocks of README.md's section heading (a "## " heading),
// by "### " subsection, in order. A block in another language fails the test: the quick start
// promises that every block of it runs.
func quickStartBlocks(t *testing.T, heading string) map[string][]readmeBlock {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string][]readmeBlock{}
	in, section := false, ""
	var block *readmeBlock
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case block != nil && line == "```":
			blocks[block.section] = append(blocks[block.section], *block)
			block = nil
		case block != nil:
			block.text += line + "\n"
		case strings.HasPrefix(line, "## "):
			in = strings.TrimPrefix(line, "## ") == heading
		case !in:
		case strings.HasPrefix(line, "### "):
			section = strings.TrimPrefix(line, "### ")
		case strings.HasPrefix(line, "```"):
			lang := strings.TrimPrefix(line, "```")
			if lang != "sh" && lang != "yaml" {
				t.Fatalf("README.md:%d: a %q block in %q, which the quick start test cannot run: use sh or yaml", n, lang, heading)
			}
			block = &readmeBlock{section: section, lang: lang, line: n}
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("README.md has no blocks under %q", heading)
	}
	return blocks
}

// adminShell runs README blocks as an admin does at a shell: oc on the PATH (kubectl, whose
// commands the quick start keeps to), csi-olm as a release ships it, the stack's admin
// kubeconfig.
type adminShell struct {
	env []string
}

func newAdminShell(t *testing.T, s *testbed.Stack) *adminShell {
	t.Helper()
	bin := t.TempDir()
	links := map[string]string{
		"oc":      testutil.Tool(t, "kubectl"),
		"csi-olm": testutil.BuildStatic(t, "github.com/csi-olm/csi-olm/cmd/csi-olm", "amd64"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return &adminShell{env: []string{
		"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "KUBECONFIG=" + s.Kubeconfig, "LANG=C.UTF-8",
	}}
}

// run runs one block: a sh block with bash (-e: a failed command fails the block), a yaml block
// with `oc apply -f -`.
func (a *adminShell) run(ctx context.Context, t *testing.T, b readmeBlock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 12*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	switch b.lang {
	case "sh":
		cmd = exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", b.text)
	default:
		cmd = exec.CommandContext(ctx, "bash", "-e", "-c", "oc apply -f -")
		cmd.Stdin = strings.NewReader(b.text)
	}
	cmd.Env = a.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README.md:%d (%s), run as written: %v\n%s\noutput:\n%s", b.line, b.section, err, b.text, out)
	}
	t.Logf("README.md:%d (%s):\n%s", b.line, b.section, out)
}

// runSection runs every block of a section, in order.
func (a *adminShell) runSection(ctx context.Context, t *testing.T, blocks map[string][]readmeBlock, section string) {
	t.Helper()
	if len(blocks[section]) == 0 {
		t.Fatalf("README.md's admin quick start has no blocks under %q", section)
	}
	for _, b := range blocks[section] {
		a.run(ctx, t, b)
	}
}

// TestAdminQuickStartOnRealNode runs README.md's admin quick start as written, block by block,
// on a cluster of its own: the catalog of the cluster's minor as a release published it, the
// operator from OLM, the driver on the node, a StorageClass, an app team's SharedVolume, and the
// uninstall. Between the sections it checks that the cluster is where the README says it is.
// The community source switch runs in TestSourceSwitchOnRealNode, which has a community install
// to switch.
func TestAdminQuickStartOnRealNode(t *testing.T) {
	blocks := quickStartBlocks(t, adminQuickStart)
	flow := []string{installSection, driverSection, classSection, sharedSection, uninstallSection}
	for section := range blocks {
		if !slices.Contains(flow, section) && section != switchSection {
			t.Errorf("README.md's admin quick start section %q has blocks that no test runs", section)
		}
	}
	stopRealNode() // a cluster of its own: the README names objects other flows make too
	t.Cleanup(stopRealNode)
	s := startRealNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c := s.Client
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true, Version: clusterRelease(clusterMinor)}); err != nil {
		t.Fatal(err)
	}
	p := publish(t, s)
	minor, err := kube.ClusterMinor(ctx, s.Config)
	if err != nil {
		t.Fatal(err)
	}
	shipped := csvDeployment(t, p.csvFile(efsPackage, efsReleaseFor(t, minor).Version))
	admin := newAdminShell(t, s)

	admin.runSection(ctx, t, blocks, installSection)
	pod := operatorPod(ctx, t, c, quickStartNS, shipped)
	assertRunsAsShipped(t, pod, shipped)

	admin.runSection(ctx, t, blocks, driverSection)
	waitDriverRunning(ctx, t, s, quickStartNS)

	admin.runSection(ctx, t, blocks, classSection)
	var class storagev1.StorageClass
	if err := c.Get(ctx, client.ObjectKey{Name: "efs-sc"}, &class); err != nil || class.Provisioner != efs.DriverName {
		t.Errorf("the README's StorageClass provisions with %q (%v), want %s", class.Provisioner, err, efs.DriverName)
	}

	admin.runSection(ctx, t, blocks, sharedSection)
	var sv sharedvolumev1alpha1.SharedVolume
	must(t, c.Get(ctx, client.ObjectKey{Namespace: quickStartAppNS, Name: quickStartVolume}, &sv))
	var claim corev1.PersistentVolumeClaim
	must(t, c.Get(ctx, client.ObjectKey{Namespace: quickStartAppNS, Name: "pvc-" + quickStartVolume}, &claim))
	if claim.Status.Phase != corev1.ClaimBound {
		t.Errorf("the SharedVolume's claim is %s, want Bound", claim.Status.Phase)
	}
	volume := claim.Spec.VolumeName

	admin.runSection(ctx, t, blocks, uninstallSection)
	for _, gone := range []struct {
		obj client.Object
		key client.ObjectKey
	}{
		{&operatorv1.ClusterCSIDriver{}, client.ObjectKey{Name: efs.CRName}},
		{&appsv1.DaemonSet{}, client.ObjectKey{Namespace: quickStartNS, Name: efs.NodeDaemonSet}},
		{&operatorsv1alpha1.Subscription{}, client.ObjectKey{Namespace: quickStartNS, Name: efsPackage}},
		{&corev1.Pod{}, client.ObjectKeyFromObject(pod)},
	} {
		must(t, testutil.Eventually(ctx, fmt.Sprintf("%T %s gone after the README's uninstall", gone.obj, gone.key), func(ctx context.Context) error {
			if err := c.Get(ctx, gone.key, gone.obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		}))
	}
	// The volumes stay, and the SharedVolume no longer waits for an operator that is gone.
	must(t, c.Get(ctx, client.ObjectKey{Name: volume}, &corev1.PersistentVolume{}))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(&claim), &claim))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(&sv), &sv))
	if len(sv.Finalizers) != 0 {
		t.Errorf("after the README's uninstall the SharedVolume keeps finalizers %v", sv.Finalizers)
	}
}
