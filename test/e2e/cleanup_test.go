package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// helperEnv makes this test binary, run again as a child, act as a test that starts a stack and
// then ends badly in the way the variable names.
const helperEnv = "CSI_OLM_E2E_HELPER"

// childStall is how long a child of TestCleanExit may print nothing before it counts as stuck.
// Starting a stack prints a line per component, each a few seconds apart on an idle machine: a
// child that is merely slow keeps printing, one that is stuck prints nothing more.
const childStall = 2 * time.Minute

// helperTimeout is the first -test.timeout the "hang" child is given. The timeout counts from the
// child's start, the stack's start included: a child whose timeout ends its start (a slow
// machine) ran the timeout's path but not after a stack was up, and runs again with twice the
// timeout, as long as each run gets further than the one before.
const helperTimeout = 20 * time.Second

// TestHelperStack is not a test on its own: it is the child of TestCleanExit.
func TestHelperStack(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("child process of TestCleanExit: runs only when " + helperEnv + " is set")
	}
	// Named before the start, so that the parent can look for processes of a stack whose start
	// did not finish.
	dir := t.TempDir()
	fmt.Printf("STACKDIR %s\n", dir)
	s := testutil.StartTestBed(t, testbed.APIServer, func(o *testbed.Options) { o.Dir = dir })
	fmt.Printf("STACK %s\n", s.Dir)
	switch mode {
	case "fail":
		t.Fatal("failing on purpose")
	case "panic":
		panic("panicking on purpose")
	case "hang": // ended by -test.timeout or by SIGKILL
		select {}
	}
}

// childRun is what the parent saw of one child.
type childRun struct {
	dir     string // STACKDIR: where its stack lives, started or not
	started bool   // STACK: the stack was up
	output  string
	state   *os.ProcessState
	stuck   error // the child printed nothing for childStall and was killed
}

// timedOutBeforeStack reports whether the child's own -test.timeout ended it while its stack was
// still starting.
func (r childRun) timedOutBeforeStack() bool {
	return !r.started && strings.Contains(r.output, "panic: test timed out after")
}

// logged is how far the child's stack got: the bytes its components wrote to their logs. A
// component prints one line when it starts and then, while it gets ready, only to its log.
func (r childRun) logged() int64 {
	var n int64
	_ = filepath.WalkDir(filepath.Join(r.dir, "logs"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// runChild runs TestHelperStack in mode, SIGKILLing it once its stack is up when sigkill is set.
// Nothing but the child's silence ends the wait: a child that prints nothing for childStall is
// killed and reported stuck.
func runChild(mode string, sigkill bool, args ...string) (childRun, error) {
	ctx, stop := progress.WithStall(context.Background(), childStall)
	defer stop()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperStack$", "-test.v"}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return childRun{}, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return childRun{}, err
	}
	// A stuck child is killed; its stack must then go as it would after any other death.
	stopKilling := context.AfterFunc(ctx, func() {
		if progress.IsStall(context.Cause(ctx)) {
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	})
	defer stopKilling()
	var r childRun
	output := &strings.Builder{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		output.WriteString(line + "\n")
		progress.Advance(ctx, line)
		if dir, ok := strings.CutPrefix(line, "STACKDIR "); ok {
			r.dir = dir
		} else if _, ok := strings.CutPrefix(line, "STACK "); ok {
			r.started = true
			if sigkill {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}
	_ = cmd.Wait()
	if progress.IsStall(context.Cause(ctx)) {
		r.stuck = context.Cause(ctx)
	}
	r.output, r.state = output.String(), cmd.ProcessState
	return r, nil
}

// TestCleanExit runs a test that starts a stack and then fails, panics, times out or is killed,
// and checks that no process of that stack survives its test binary.
func TestCleanExit(t *testing.T) {
	t.Parallel()
	// A parallel test runs once every other test of the package is done: the real node the last
	// of them left running would refuse the child's start (one machine runs one).
	stopRealNode()
	for _, tc := range []struct {
		mode    string
		timeout bool // ended by its own -test.timeout
		sigkill bool
	}{
		{mode: "fail"},
		{mode: "panic"},
		{mode: "hang", timeout: true},
		{mode: "hang", sigkill: true},
	} {
		name := tc.mode
		if tc.sigkill {
			name += "-sigkill"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			timeout, farthest := helperTimeout, int64(0)
			for {
				var args []string
				if tc.timeout {
					args = append(args, "-test.timeout="+timeout.String())
				}
				r, err := runChild(tc.mode, tc.sigkill, args...)
				if err != nil {
					t.Fatal(err)
				}
				// Every run, its stack up or not, must leave none of its processes behind.
				if r.dir != "" {
					if pids := waitForNoSurvivors(r.dir, 10*time.Second); len(pids) > 0 {
						t.Errorf("processes of the child's stack survived it: %v\n%s", pids, r.output)
					}
				}
				if r.stuck != nil {
					t.Fatalf("the child is stuck: %v\n%s", r.stuck, r.output)
				}
				// Slow, not stuck: each run's stack got further (logged more) than the one before.
				if got := r.logged(); tc.timeout && r.timedOutBeforeStack() && got > farthest {
					t.Logf("the child's -test.timeout=%s ended it while its stack was starting (%d bytes logged): running it again with twice the timeout", timeout, got)
					timeout, farthest = 2*timeout, got
					continue
				}
				if !r.started {
					t.Fatalf("the child never started its stack:\n%s", r.output)
				}
				if r.state.Success() {
					t.Fatalf("the child test passed; it should have ended badly:\n%s", r.output)
				}
				if tc.timeout && !strings.Contains(r.output, "panic: test timed out after "+timeout.String()) {
					t.Fatalf("the child was not ended by its -test.timeout=%s:\n%s", timeout, r.output)
				}
				return
			}
		})
	}
}
