package testbed

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The names of the control-plane components, which Restart and Pause take.
const (
	EtcdComponent      = "etcd"
	APIServerComponent = "kube-apiserver"
)

// restartGrace is how long a restarted component may take to shut down cleanly. With clients
// connected, kube-apiserver drains its requests at once but then may not exit at all; after
// this long it is killed, as the kubelet kills a static pod after its grace period.
const restartGrace = 15 * time.Second

func (s *Stack) setReady(name string, check func(context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready == nil {
		s.ready = map[string]func(context.Context) error{}
	}
	s.ready[name] = check
}

// component returns the running process of a component, by name.
func (s *Stack) component(name string) (*process, func(context.Context) error, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		if p.Name == name {
			return p, s.ready[name], nil
		}
	}
	return nil, nil, fmt.Errorf("the stack runs no %s", name)
}

// Restart stops a component the way an administrator's restart does (SIGTERM, then SIGKILL after
// a grace period) and starts it again exactly as it was started: same binary, arguments, ports
// and data directory. It returns once the component serves again. The reliability campaign
// restarts the control plane under the operator with it.
func (s *Stack) Restart(ctx context.Context, name string) error {
	return s.restart(ctx, name, nil, nil)
}

// restart is Restart with the environment and arguments changed: env entries replace those of
// the same name, and args those with the same flag name (the part before "=").
func (s *Stack) restart(ctx context.Context, name string, env, args []string) error {
	old, ready, err := s.component(name)
	if err != nil {
		return err
	}
	stopped := time.Now()
	how := "stopped by SIGTERM"
	if old.stop(restartGrace) {
		how = "did not stop on SIGTERM; SIGKILL"
	}
	s.opts.Logf("%s %s after %v", name, how, time.Since(stopped).Round(10*time.Millisecond))
	p, err := startProcess(s.Dir, name, old.detached, replaceKeyed(old.env, env), old.bin, replaceKeyed(old.args, args)...)
	if err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	s.mu.Lock()
	for i, q := range s.procs {
		if q == old {
			s.procs[i] = p
		}
	}
	s.mu.Unlock()
	s.opts.Logf("restarted %s (pid %d)", name, p.PID)
	if ready == nil {
		return nil
	}
	return poll(ctx, p, name+" serving after its restart", ready)
}

// replaceKeyed replaces the entries of list whose key (before "=") a replacement has, and adds
// the others.
func replaceKeyed(list, replacements []string) []string {
	out := slices.Clone(list)
	for _, r := range replacements {
		key, _, _ := strings.Cut(r, "=")
		i := slices.IndexFunc(out, func(e string) bool { k, _, _ := strings.Cut(e, "="); return k == key })
		if i < 0 {
			out = append(out, r)
			continue
		}
		out[i] = r
	}
	return out
}

// Pause freezes a component with SIGSTOP, as a hung host or a network partition does: its
// connections stay open and nothing answers on them. It returns once every thread of the
// process is stopped (the kernel stops each as it is next scheduled, not at once). The returned
// resume sends SIGCONT.
func (s *Stack) Pause(name string) (resume func() error, err error) {
	p, _, err := s.component(name)
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(-p.PID, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pausing %s: %w", name, err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return frozen(p.PID), nil
	}); err != nil {
		_ = syscall.Kill(-p.PID, syscall.SIGCONT)
		return nil, fmt.Errorf("pausing %s (pid %d): its threads did not all stop: %w", name, p.PID, err)
	}
	return func() error {
		if err := syscall.Kill(-p.PID, syscall.SIGCONT); err != nil {
			return fmt.Errorf("resuming %s: %w", name, err)
		}
		return nil
	}, nil
}
