// Command peakrss runs a command and prints its wall time in nanoseconds and its peak RSS in
// bytes. BenchmarkValidateVsOpm starts commands through it because Linux, at exec, counts in a
// command's peak RSS the memory of the process that started it by vfork: this one is small, the
// benchmark's process is not.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peakrss COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "peakrss: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	fmt.Println(time.Since(start).Nanoseconds(), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss*1024)
}
