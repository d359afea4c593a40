// Package dev is the `csi-olm dev` verb group: a local cluster for trying the operators by hand.
package dev

import "github.com/spf13/cobra"

// NewCommand returns the group with its verbs.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local Kubernetes cluster with OLM for trying the operators by hand",
	}
	cmd.AddCommand(newUp(), newDown())
	return cmd
}
