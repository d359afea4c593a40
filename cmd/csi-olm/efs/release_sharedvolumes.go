package efs

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/sharedvolume/releasesharedvolumes"
)

func newReleaseSharedVolumes() *cobra.Command {
	r := &releasesharedvolumes.Release{}
	cmd := &cobra.Command{
		Use:   "release-sharedvolumes",
		Short: "Release SharedVolume finalizers after every EFS operator was uninstalled",
		Long: `Removes the finalizer ` + efs.SharedVolumeFinalizer + ` from SharedVolumes that are being deleted
(all of them with --all), so that their deletion, or the deletion of their CRD, completes once
no operator is left to do it. Their PersistentVolumes and PersistentVolumeClaims stay as they
are: the volumes keep working, and deleting the claims and volumes is left to the admin.

Refuses while a SharedVolume controller runs (Deployment aws-efs-csi-driver-operator or
aws-efs-operator in any namespace). Only prints its plan unless --confirm.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r.Out = cmd.OutOrStdout()
			return r.Run(cmd.Context())
		},
	}
	flags.BindCluster(cmd, &r.ClusterOptions, true)
	cmd.Flags().StringVarP(&r.Output, "output", "o", "text", "plan format: text, json or yaml")
	cmd.Flags().BoolVar(&r.All, "all", false, "release every SharedVolume, not only those being deleted")
	return cmd
}
