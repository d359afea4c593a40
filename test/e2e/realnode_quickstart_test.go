package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// The admin quick start of README.md and its sections, by heading. Every section with a block
// runs in TestAdminQuickStartOnRealNode or TestSourceSwitchOnRealNode; a section added to the
// README without one fails the test.
const (
	adminQuickStart  = "Quick start: cluster admin"
	installSection   = "Install the operator (OLM v0)"
	driverSection    = "Start the driver"
	classSection     = "Dynamic provisioning: a StorageClass"
	sharedSection    = "Shared volumes for app teams: SharedVolume"
	switchSection    = "Coming from the community aws-efs-operator"
	olmv1Section     = "Moving to OLM v1"
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
// kubeconfig and a registries.conf that mirrors the upstream registries.
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
	// The admin's workstation pulls images from the mirrors of its registries.conf, as podman
	// does: the stack's registry stands in for quay.io and the others.
	conf, err := s.HostRegistriesConf()
	if err != nil {
		t.Fatal(err)
	}
	return &adminShell{env: []string{
		"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "KUBECONFIG=" + s.Kubeconfig, "LANG=C.UTF-8",
		"CONTAINERS_REGISTRIES_CONF=" + conf,
	}}
}

// run runs one block: a sh block with bash (-e: a failed command fails the block), a yaml block
// with `oc apply -f -`. A block may wait in silence for minutes (`oc wait`), so the flow's stall
// window does not run while it does: its waits end at the README's own --timeout, as they do in
// an admin's shell. The block's end is a step of the flow.
func (a *adminShell) run(ctx context.Context, t *testing.T, b readmeBlock) {
	t.Helper()
	defer progress.Advance(ctx, "README.md:"+strconv.Itoa(b.line)+" run")
	ctx = context.WithoutCancel(ctx)
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
