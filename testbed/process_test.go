package testbed_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

func TestCPUTime(t *testing.T) {
	before := testbed.CPUTime(os.Getpid())
	// Spin until the kernel has charged this process at least five of its 10 ms ticks more.
	deadline := time.Now().Add(10 * time.Second)
	for testbed.CPUTime(os.Getpid())-before < 50*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("10 s of spinning raised the CPU time read from /proc by %v only", testbed.CPUTime(os.Getpid())-before)
		}
	}
	if wall := 10*time.Second - time.Until(deadline); testbed.CPUTime(os.Getpid())-before > wall+time.Second {
		t.Errorf("CPU time rose by %v in %v of one spinning goroutine", testbed.CPUTime(os.Getpid())-before, wall)
	}
	if got := testbed.CPUTime(1 << 30); got != 0 {
		t.Errorf("CPUTime of a PID that cannot exist = %v, want 0", got)
	}
}

// A stack says, as it stops, what CPU each of its components used, most first.
func TestStopReportsEachComponentsCPU(t *testing.T) {
	opts := testbed.Options{Level: testbed.APIServer, Dir: t.TempDir()}
	tools, err := testutil.TestBedTools(testbed.NeededTools(opts)...)
	if err != nil {
		t.Fatalf("test bed tools: %v", err)
	}
	opts.Tools = tools
	var mu sync.Mutex
	var lines []string
	opts.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	ctx, cancel := progress.WithStall(context.Background(), time.Minute)
	defer cancel()
	s, err := testbed.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop()
	mu.Lock()
	defer mu.Unlock()
	var reports []string
	for _, l := range lines {
		if strings.HasPrefix(l, "stack CPU: ") {
			reports = append(reports, l)
		}
	}
	if len(reports) != 1 || !regexp.MustCompile(`^stack CPU: (etcd|kube-apiserver) \d+\.\d s, (etcd|kube-apiserver) \d+\.\d s$`).MatchString(reports[0]) {
		t.Errorf("reports %q: want one, of etcd and kube-apiserver, said once though stopped twice", reports)
	}
}
