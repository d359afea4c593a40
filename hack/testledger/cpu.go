package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/csi-olm/csi-olm/internal/procstat"
)

// cpuAction runs a command and, while it runs, reads every process's CPU time each Interval, then
// prints the CPU time of each program (by the name it was run as) on the machine. A tier's wall
// time on 2 full cores is its CPU time halved, so this says what to cut: a timing of tests alone
// does not show the links, the compiles or the API servers they start.
type cpuAction struct {
	Command  []string
	N        int
	Interval time.Duration
	Stdin    io.Reader
	Out, Err io.Writer // the command's
	Report   io.Writer
}

// procKey names a process for the whole run: a pid with its start time, since pids are reused.
type procKey struct {
	pid   int
	start string
}

type procCPU struct {
	program string
	seconds float64
}

func (a *cpuAction) Run(ctx context.Context) error {
	// What ran before the command counts from here: its CPU time so far is not the command's.
	before := map[procKey]procCPU{}
	sampleProcs(before)
	cmd := exec.CommandContext(ctx, a.Command[0], a.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.Stdin, a.Out, a.Err
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", a.Command[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	seen := map[procKey]procCPU{}
	tick := time.NewTicker(a.Interval)
	defer tick.Stop()
	var runErr error
	for waiting := true; waiting; {
		sampleProcs(seen)
		select {
		case runErr = <-done:
			waiting = false
		case <-tick.C:
		}
	}
	var tree time.Duration // the kernel's count for the command and what it waited for
	if st := cmd.ProcessState; st != nil {
		tree = st.UserTime() + st.SystemTime()
	}
	a.report(seen, before, time.Since(began), tree)
	if runErr != nil {
		return fmt.Errorf("%s: %w", strings.Join(a.Command, " "), runErr)
	}
	return nil
}

func (a *cpuAction) report(seen, before map[procKey]procCPU, wall, tree time.Duration) {
	byProgram := map[string]float64{}
	var total float64
	for key, p := range seen {
		used := p.seconds - before[key].seconds
		byProgram[p.program] += used
		total += used
	}
	programs := make([]string, 0, len(byProgram))
	for name := range byProgram {
		programs = append(programs, name)
	}
	slices.SortFunc(programs, func(x, y string) int {
		return cmp.Or(cmp.Compare(byProgram[y], byProgram[x]), cmp.Compare(x, y))
	})
	fmt.Fprintf(a.Report, "the command ran %.0f s; it and the processes it waited for used %.1f s of CPU (the kernel's count)\n",
		wall.Seconds(), tree.Seconds())
	fmt.Fprintf(a.Report, "CPU time of every process on the machine meanwhile, by program (%.0f s; read every %s, so a process that lived less may be missed):\n",
		total, a.Interval)
	for _, name := range programs[:min(a.N, len(programs))] {
		if byProgram[name] == 0 {
			break
		}
		fmt.Fprintf(a.Report, "%8.1f s  %4.1f%%  %s\n", byProgram[name], 100*byProgram[name]/total, name)
	}
}

// sampleProcs records the CPU time each process has used so far; a process's last sample stands
// for it once it has exited.
func sampleProcs(seen map[procKey]procCPU) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since the listing
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		st, ok := procstat.Parse(string(stat))
		if !ok {
			continue
		}
		seen[procKey{pid, st.Start}] = procCPU{program: programName(cmdline, st.Comm), seconds: st.CPU.Seconds()}
	}
}

// programName is the base name a process was run as (go's compile and link, a test binary's
// pkg.test), or, for a kernel thread without a command line, its command name.
func programName(cmdline []byte, comm string) string {
	argv0, _, _ := strings.Cut(string(cmdline), "\x00")
	if argv0 == "" {
		return comm
	}
	return filepath.Base(argv0)
}
