//go:build linux

package dev

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/testbed/dev"
)

func newDown() *cobra.Command {
	d := &dev.Down{}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster that `csi-olm dev up` started",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d.Out = cmd.OutOrStdout()
			return d.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&d.Home, "home", dev.Home(), "directory of the cluster's state and data")
	cmd.Flags().BoolVar(&d.KeepData, "keep-data", false, "keep the cluster's data and logs")
	return cmd
}
