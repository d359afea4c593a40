//go:build !linux

package dev

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// The local cluster runs its components as Linux processes (process groups that die with
// csi-olm, /proc, network namespaces and mounts for the real node), so elsewhere the verbs only
// say where they run.
func newUp() *cobra.Command   { return linuxOnly("up", "Start a local cluster with OLM (Linux only)") }
func newDown() *cobra.Command { return linuxOnly("down", "Stop the local cluster (Linux only)") }

func linuxOnly(use, short string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("csi-olm dev %s runs the cluster's components as Linux processes and needs Linux, not %s: run it in a Linux machine or VM", use, runtime.GOOS)
		},
	}
}
