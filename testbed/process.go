package testbed

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/csi-olm/csi-olm/internal/procstat"
	"github.com/csi-olm/csi-olm/internal/progress"
)

// MarkerEnv is set on every process a stack starts, with the stack's directory as value, so a
// leak check can find any survivor by reading /proc/<pid>/environ.
const MarkerEnv = "CSI_OLM_TESTBED"

// process is one component of a stack: a binary running in its own process group with its
// output in a log file.
type process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	Log  string `json:"log"`
	// Stack is the MarkerEnv value the process carries; stop checks it so that a recycled PID
	// is never killed.
	Stack string `json:"stack"`

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// How it was started, so that Stack.Restart can start it again the same way.
	bin       string
	args, env []string
	detached  bool
}

// componentGC is the Go runtime's GC setting of the components, put before the environment,
// which may set its own. The API servers are the largest share of the test tiers' CPU
// (BENCHMARKS.md#ci-time), and a profile of one spent about half of it allocating and collecting:
// letting the heap grow to five times the live heap before a collection instead of twice took a
// fifth off the API server's CPU in TestRemovalFenceAtScale. The 4 GiB cap holds the three
// clusters `make e2e` runs at once, the field-sized fence's among them, to half the machine's
// memory. Only the pacing of collection changes, no behaviour.
var componentGC = []string{"GOGC=400", "GOMEMLIMIT=4GiB"}

// startProcess runs a binary in its own process group. When detached, the process survives the
// caller (dev up); otherwise the kernel kills it if the caller dies first (test timeouts kill
// the test binary without running cleanups).
func startProcess(stackDir, name string, detached bool, env []string, bin string, args ...string) (*process, error) {
	logPath := filepath.Join(stackDir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = stackDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(append(append(componentGC[:len(componentGC):len(componentGC)], os.Environ()...), MarkerEnv+"="+stackDir), env...)
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{Name: name, PID: cmd.Process.Pid, Log: logPath, Stack: stackDir, cmd: cmd, done: make(chan struct{}),
		bin: bin, args: args, env: env, detached: detached}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	if p.done == nil {
		return !alive(p.PID), nil
	}
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs it, and reports
// whether it had to. A process that has already ended, or whose PID now belongs to someone
// else, is left alone.
func (p *process) stop(grace time.Duration) (killed bool) {
	if !alive(p.PID) || !hasMarker(p.PID, p.Stack) {
		return false
	}
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	if waitGroupGone(p.PID, grace) {
		return false
	}
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	waitGroupGone(p.PID, 5*time.Second)
	return true
}

// waitGroupGone reports whether a process group ended within the time given.
func waitGroupGone(pid int, within time.Duration) bool {
	gone := func(context.Context) (bool, error) { return !groupAlive(pid), nil }
	return wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, within, true, gone) == nil
}

// hasMarker reports whether a process carries the MarkerEnv value of a stack.
func hasMarker(pid int, stack string) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return false
	}
	want := MarkerEnv + "=" + stack
	for _, kv := range splitNUL(raw) {
		if string(kv) == want {
			return true
		}
	}
	return false
}

// RSS returns the resident memory of a process in bytes, 0 when it is gone.
func RSS(pid int) uint64 { return memoryStatus(pid, "VmRSS:") }

// PeakRSS returns the most resident memory a process has had, in bytes, 0 when it is gone.
func PeakRSS(pid int) uint64 { return memoryStatus(pid, "VmHWM:") }

// memoryStatus reads a memory figure, in kB, of /proc/PID/status.
func memoryStatus(pid int, field string) uint64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb uint64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

// CPUTime returns the CPU time (user and system) a process has used so far, 0 when it is gone.
func CPUTime(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	st, _ := procstat.Parse(string(raw))
	return st.CPU
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil && !zombie(pid)
}

func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil && !zombie(pgid)
}

func zombie(pid int) bool {
	return procState(fmt.Sprintf("/proc/%d/stat", pid)) == 'Z'
}

// procState reads the state letter of a /proc stat file, 0 when it cannot be read.
func procState(statFile string) byte {
	raw, err := os.ReadFile(statFile)
	if err != nil {
		return 0
	}
	// The state follows the parenthesised command name.
	if i := strings.LastIndexByte(string(raw), ')'); i >= 0 && i+2 < len(raw) {
		return raw[i+2]
	}
	return 0
}

// frozen reports whether every thread of a process is stopped by a signal.
func frozen(pid int) bool {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return false
	}
	for _, stat := range stats {
		if procState(stat) != 'T' {
			return false
		}
	}
	return true
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// Survivors returns the PIDs of processes whose environment carries MarkerEnv, with the value
// prefix given ("" for any stack).
func Survivors(prefix string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	marker := []byte(MarkerEnv + "=" + prefix)
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || zombie(pid) {
			continue
		}
		for _, kv := range splitNUL(raw) {
			if len(kv) >= len(marker) && string(kv[:len(marker)]) == string(marker) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func splitNUL(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == 0 {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	return append(out, b[start:])
}

// poll calls check until it returns nil, the context ends or the process dies.
func poll(ctx context.Context, p *process, what string, check func(context.Context) error) error {
	var last error
	var reason progress.Reason
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		reason.Report(ctx, what, last)
		if last == nil {
			return true, nil
		}
		if p != nil {
			if done, err := p.exited(); done {
				return false, fmt.Errorf("%s exited while waiting for %s (%v); log tail:\n%s", p.Name, what, err, Tail(p.Log, 20))
			}
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("waiting for %s: %w (last check: %v)", what, progress.Cause(ctx), last)
	}
	return err
}
