package testutil

import (
	"context"
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
				t.Logf("test bed logs:\n%s", s.LogTails(30))
			}
			s.Stop()
		})
	}
	if err != nil {
		t.Fatalf("starting a %s stack: %v", level, err)
	}
	return s
}
