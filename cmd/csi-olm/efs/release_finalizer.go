package efs

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/operator/releasefinalizer"
)

func newReleaseFinalizer() *cobra.Command {
	r := &releasefinalizer.Release{}
	cmd := &cobra.Command{
		Use:   "release-finalizer",
		Short: "Release ClusterCSIDriver efs.csi.aws.com after the EFS operator was uninstalled",
		Long: `The EFS operator keeps finalizers on ClusterCSIDriver efs.csi.aws.com so that deleting it
removes the driver, and only once no pod uses an EFS volume. When the operator itself has
been uninstalled, nothing removes them and deleting the CR waits forever.

This verb removes the operator's finalizers, and only them, after checking that no operator
Deployment is left in any namespace. The driver's objects are not touched: they keep serving
every volume. It only prints its plan unless --confirm.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.Out = cmd.OutOrStdout()
			return r.Run(cmd.Context())
		},
	}
	flags.BindCluster(cmd, &r.ClusterOptions, false)
	cmd.Flags().StringVarP(&r.Output, "output", "o", "text", "plan format: text, json or yaml")
	return cmd
}
