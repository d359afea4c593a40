package testutil

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/testbed"
)

var (
	toolsMu sync.Mutex
	// found holds every tool this process has asked hack/tools.sh for.
	found testbed.Tools
)

// TestBedTools returns the named test bed tools (hack/tools.sh names; every tool when none is
// named), asking hack/tools.sh only for those this process has not found yet, so that a test
// never waits for a tool its stack does not run.
func TestBedTools(names ...string) (testbed.Tools, error) {
	if len(names) == 0 {
		names = testbed.AllTools()
	}
	toolsMu.Lock()
	defer toolsMu.Unlock()
	var missing []string
	for _, name := range names {
		if found.Path(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		more, err := testbed.FindTools(missing...)
		if err != nil {
			return testbed.Tools{}, err
		}
		found = found.Merge(more)
	}
	return found, nil
}

// Tool returns the path of one test bed tool (a hack/tools.sh name), building it if missing.
func Tool(tb testing.TB, name string) string {
	tb.Helper()
	tools, err := TestBedTools(name)
	if err != nil {
		tb.Fatalf("test bed tools: %v", err)
	}
	return tools.Path(name)
}

// WithTools is an option of StartTestBed for a test that uses tools beyond those its stack runs
// (a sidecar binary, a directory of CRDs): the stack's Tools carry them too.
func WithTools(tb testing.TB, names ...string) func(*testbed.Options) {
	tb.Helper()
	tools, err := TestBedTools(names...)
	if err != nil {
		tb.Fatalf("test bed tools: %v", err)
	}
	return func(o *testbed.Options) { o.Tools = o.Tools.Merge(tools) }
}

// stackStall is how long a stack's start may go with no component started and no readiness
// check seeing anything new before it counts as stuck.
const stackStall = 2 * time.Minute

// StartTestBed starts a stack for a test. The stack lives in the test's temporary directory, is
// stopped when the test ends (also on failure and panic; on a timeout the kernel kills its
// processes with the test binary), and the tails of its logs are printed when the test failed.
// Each option may change the stack's options (a registry, say) before it starts.
func StartTestBed(t testing.TB, level testbed.Level, options ...func(*testbed.Options)) *testbed.Stack {
	t.Helper()
	opts := testbed.Options{Level: level, Dir: t.TempDir()}
	for _, o := range options {
		o(&opts)
	}
	tools, err := TestBedTools(testbed.NeededTools(opts)...)
	if err != nil {
		t.Fatalf("test bed tools: %v", err)
	}
	opts.Tools = opts.Tools.Merge(tools)
	// The stall window starts once the tools are there: a cold build is not the stack's start.
	// Each component that starts, and each change a readiness check sees, is a step.
	ctx, cancel := progress.WithStall(context.Background(), stackStall)
	defer cancel()
	// Benchmarks print every log line; tests only on failure or with -v.
	if testing.Verbose() {
		opts.Logf = t.Logf
	}
	s, err := testbed.Start(ctx, opts)
	if s != nil {
		t.Cleanup(func() {
			if t.Failed() {
				// A few lines each: CI keeps only the tail of a run's output, and the test's own
				// errors, printed before these, must stay in it.
				t.Logf("test bed logs (full logs in %s):\n%s", filepath.Join(s.Dir, "logs"), s.LogTails(8))
			}
			s.Stop()
		})
	}
	if err != nil {
		t.Fatalf("starting a %s stack: %v", level, err)
	}
	return s
}

// StartRegistry starts the test bed's image registry alone, on loopback over plain HTTP, and
// returns its host:port.
func StartRegistry(t testing.TB) string {
	t.Helper()
	return StartTestBed(t, testbed.APIServer, func(o *testbed.Options) { o.Registry, o.NoCluster = true, true }).Registry
}
