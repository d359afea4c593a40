package testbed

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRemoveBornAfter: a host path kubelet created for a pod goes, with the ancestors created
// with it; what existed before the node stays, content included.
func TestRemoveBornAfter(t *testing.T) {
	root := t.TempDir()
	old := filepath.Join(root, "etc")
	if err := os.MkdirAll(filepath.Join(old, "kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Birth times have nanoseconds, but be clear of the clock's granularity.
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	created := filepath.Join(old, "amazon", "efs")
	if err := os.MkdirAll(created, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(created, "efs-utils.conf"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{created, filepath.Join(old, "kept"), filepath.Join(root, "never")} {
		if err := removeBornAfter(p, start); err != nil {
			t.Fatalf("removeBornAfter(%s): %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(old, "amazon")); !os.IsNotExist(err) {
		t.Errorf("the created ancestor %s/amazon is still there: %v", old, err)
	}
	if _, err := os.Stat(filepath.Join(old, "kept")); err != nil {
		t.Errorf("a directory from before the node was removed: %v", err)
	}
}
