// Package e2e holds the end-to-end tests that run against the local test bed (`make e2e`).
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator/assets"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// imageBinaries are the programs the tests push as images for the real node to run.
var imageBinaries = []string{
	"github.com/csi-olm/csi-olm/cmd/aws-efs-csi-driver-operator",
	"github.com/csi-olm/csi-olm/test/e2e/csistandin",
	"github.com/csi-olm/csi-olm/test/e2e/scraper",
	"github.com/csi-olm/csi-olm/test/e2e/netprobe",
	"github.com/csi-olm/csi-olm/cmd/csi-olm",
}

// noRealNodeEnv, when set, says this test process starts no real node: `make e2e` runs the
// real-node flows in a process of their own beside this one, and this process must leave that
// node alone (UndoAbandonedNode would refuse it). A test that asks for a real node here fails.
const noRealNodeEnv = "CSI_OLM_E2E_NO_REAL_NODE"

// runDir holds every stack this test binary starts; the leak check looks for processes that
// carry it in their environment.
var runDir string

func TestMain(m *testing.M) {
	var err error
	if runDir, err = os.MkdirTemp("", "csi-olm-e2e-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// t.TempDir() follows TMPDIR, so every stack directory lands under runDir.
	os.Setenv("TMPDIR", runDir)
	// A node abandoned by an earlier killed run is undone by the first real node's start; undo
	// it before the snapshot, or that cleanup would read as this run changing the host.
	if os.Getenv(noRealNodeEnv) == "" {
		if err := testbed.UndoAbandonedNode(func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	before, err := hostSnapshot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Built before any test starts its clock: on a fresh machine these builds take minutes, and
	// a test that spent them from its own deadline ran out of it in the middle of a push. The
	// children TestCleanExit runs push nothing, and each such build is a link.
	if os.Getenv(helperEnv) == "" {
		if err := testutil.PrebuildStatic(filepath.Join(runDir, "images"), "amd64", imageBinaries...); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	stopRealNode()
	if realNode.started {
		// Everything a real node changed on the host must be back as it was.
		after, err := hostSnapshot()
		if diff := cmp.Diff(before, after); err != nil || diff != "" {
			fmt.Fprintf(os.Stderr, "FAIL: the real node left the host changed (-before +after): %v\n%s", err, diff)
			code = 1
		}
	}
	if pids := waitForNoSurvivors(runDir, 10*time.Second); len(pids) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: test bed processes survived the tests: %v (killed now)\n", pids)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		code = 1
	}
	if code == 0 {
		os.RemoveAll(runDir)
	} else {
		fmt.Fprintf(os.Stderr, "the test beds' directories, with every component's log, are kept in %s\n", runDir)
	}
	os.Exit(code)
}

// hostSnapshot is the test bed's snapshot of what a real node changes on the host, plus whether
// each host path the shipped node DaemonSet mounts exists: kubelet creates those that are
// missing, for the driver's pods.
func hostSnapshot() (map[string]string, error) {
	snap, err := testbed.HostSnapshot()
	if err != nil {
		return nil, err
	}
	raw, err := assets.For("ns")(assets.NodeFile)
	if err != nil {
		return nil, err
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(raw, &ds); err != nil {
		return nil, fmt.Errorf("%s: %w", assets.NodeFile, err)
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			_, err := os.Stat(v.HostPath.Path)
			snap["node host path "+v.HostPath.Path] = fmt.Sprint(err == nil)
		}
	}
	return snap, nil
}

// waitForNoSurvivors gives processes killed a moment ago time to disappear, and returns those
// that do not. The wait goes on while their number changes: a loaded machine reaps a stack's
// processes more slowly, and only a number that has not moved for a whole idle spell is final.
func waitForNoSurvivors(marker string, idle time.Duration) []int {
	ctx, stop := progress.WithStall(context.Background(), idle)
	defer stop()
	var pids []int
	var seen progress.Reason
	_ = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pids = testbed.Survivors(marker)
		seen.Note(ctx, "processes left", strconv.Itoa(len(pids)))
		return len(pids) == 0, nil
	})
	return pids
}

func TestControlPlane(t *testing.T) {
	t.Parallel()
	s := testutil.StartTestBed(t, testbed.APIServer)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()

	disco, err := discoveryFor(s)
	if err != nil {
		t.Fatal(err)
	}
	body, err := disco.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Fatalf("/readyz = %q, %v", body, err)
	}
	version, err := disco.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	// OLM's minKubeVersion checks compare against this: it must be a real release.
	if version.GitVersion != "v1.36.3" {
		t.Errorf("API server reports %q, want v1.36.3", version.GitVersion)
	}

	s.Stop()
	if pids := waitForNoSurvivors(s.Dir, 5*time.Second); len(pids) > 0 {
		t.Errorf("processes survived Stop: %v", pids)
	}
	if _, err := disco.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil {
		t.Error("the API server still answers after Stop")
	}
}
