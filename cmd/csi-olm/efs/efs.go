// Package efs is the `csi-olm efs` verb group: what a cluster admin runs on an EFS installation.
package efs

import "github.com/spf13/cobra"

// NewCommand returns the group with its verbs.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "efs",
		Short: "Operate on a cluster's AWS EFS CSI driver installation",
	}
	cmd.AddCommand(newReleaseFinalizer(), newReleaseSharedVolumes(), newCheckSharedVolumes())
	return cmd
}
