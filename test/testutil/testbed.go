package testutil

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/csi-olm/csi-olm/testbed"
)

var (
	toolsOnce sync.Once
	tools     testbed.Tools
	toolsErr  error
)

// TestBedTools finds the test bed's tools once per process.
func TestBedTools() (testbed.Tools, error) {
	toolsOnce.Do(func() { tools, toolsErr = testbed.FindTools() })
	return tools, toolsErr
}

// StartTestBed starts a stack for a test. The stack lives in the test's temporary directory, is
// stopped when the test ends (also on failure and panic; on a timeout the kernel kills its
// processes with the test binary), and the tails of its logs are printed when the test failed.
// Each option may change the stack's options (a registry, say) before it starts.
func StartTestBed(t testing.TB, level testbed.Level, options ...func(*testbed.Options)) *testbed.Stack {
	t.Helper()
	tools, err := TestBedTools()
	if err != nil {
		t.Fatalf("test bed tools: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := testbed.Options{Level: level, Tools: tools, Dir: t.TempDir()}
	for _, o := range options {
		o(&opts)
	}
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
