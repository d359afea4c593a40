package testbed

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNamespace runs fn on a thread that has joined the network namespace at path, then returns
// the thread to its own. A thread that cannot return is never given back to the Go scheduler:
// it ends with the goroutine.
func inNamespace(path string, fn func() error) error {
	runtime.LockOSThread()
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer own.Close()
	target, err := os.Open(path)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace %s: %w", path, err)
	}
	fnErr := fn()
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("leaving network namespace %s: %w", path, err)
	}
	runtime.UnlockOSThread()
	return fnErr
}
