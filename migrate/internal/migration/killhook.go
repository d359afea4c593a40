//go:build csiolm_killhook

package migration

import (
	"os"
	"syscall"
)

// KillAfterEnv names a step after which the process kills itself with SIGKILL, once the step
// took effect and before the journal records it: the end-to-end tests use it to prove that every
// step can be interrupted and resumed. Only binaries built with the csiolm_killhook tag (the
// tests' own builds) read it; release builds compile the no-op in nokillhook.go.
const KillAfterEnv = "CSI_OLM_MIGRATE_KILL_AFTER"

func killIfAsked(step string) {
	if os.Getenv(KillAfterEnv) == step {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught; wait for it to land
	}
}
