package testbed_test

import (
	"os"
	"testing"
	"time"

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
