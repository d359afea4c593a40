package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// helperEnv makes this test binary, run again as a child, act as a test that starts a stack and
// then ends badly in the way the variable names.
const helperEnv = "CSI_OLM_E2E_HELPER"

// TestHelperStack is not a test on its own: it is the child of TestCleanExit.
func TestHelperStack(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("child process of TestCleanExit: runs only when " + helperEnv + " is set")
	}
	s := testutil.StartTestBed(t, testbed.APIServer)
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

// TestCleanExit runs a test that starts a stack and then fails, panics, times out or is killed,
// and checks that no process of that stack survives its test binary.
func TestCleanExit(t *testing.T) {
	t.Parallel()
	// A parallel test runs once every other test of the package is done: the real node the last
	// of them left running would refuse the child's start (one machine runs one).
	stopRealNode()
	for _, tc := range []struct {
		mode    string
		args    []string
		sigkill bool
	}{
		{mode: "fail"},
		{mode: "panic"},
		{mode: "hang", args: []string{"-test.timeout=20s"}},
		{mode: "hang", sigkill: true},
	} {
		name := tc.mode
		if tc.sigkill {
			name += "-sigkill"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := append([]string{"-test.run=^TestHelperStack$", "-test.v"}, tc.args...)
			cmd := exec.CommandContext(ctx, os.Args[0], args...)
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.mode)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stackDir, output := "", &strings.Builder{}
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				output.WriteString(sc.Text() + "\n")
				if dir, ok := strings.CutPrefix(sc.Text(), "STACK "); ok {
					stackDir = dir
					if tc.sigkill {
						_ = cmd.Process.Signal(syscall.SIGKILL)
					}
				}
			}
			_ = cmd.Wait()
			if stackDir == "" {
				t.Fatalf("the child never started its stack:\n%s", output)
			}
			if cmd.ProcessState.Success() {
				t.Fatalf("the child test passed; it should have ended badly:\n%s", output)
			}
			if pids := waitForNoSurvivors(stackDir, 10*time.Second); len(pids) > 0 {
				t.Errorf("processes of the child's stack survived it: %v\n%s", pids, output)
			}
		})
	}
}
