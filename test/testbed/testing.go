package testbed

import (
	"context"
	"sync"
	"testing"
	"time"
)

var (
	toolsOnce sync.Once
	tools     Tools
	toolsErr  error
)

// CachedTools finds the tools once per process.
func CachedTools() (Tools, error) {
	toolsOnce.Do(func() { tools, toolsErr = FindTools() })
	return tools, toolsErr
}

// StartT starts a stack for a test. The stack lives in the test's temporary directory, is
// stopped when the test ends (also on failure and panic; on a timeout the kernel kills its
// processes with the test binary), and the tails of its logs are printed when the test failed.
func StartT(t testing.TB, level Level) *Stack {
	t.Helper()
	tools, err := CachedTools()
	if err != nil {
		t.Fatalf("test bed tools: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := Options{Level: level, Tools: tools, Dir: t.TempDir()}
	// Benchmarks print every log line; tests only on failure or with -v.
	if testing.Verbose() {
		opts.Logf = t.Logf
	}
	s, err := Start(ctx, opts)
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
