package migrate

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/migrate/cso"
)

func newCSO() *cobra.Command {
	m := &cso.Migrate{}
	cmd := &cobra.Command{
		Use:   "cso --driver ebs|manila",
		Short: "Hand an OLM-installed EBS or Manila CSI driver operator over to the cluster-storage-operator",
		Long: `Finds the Subscription of the driver's OLM package in any namespace and from any catalog,
records it and its CSV in a ConfigMap next to it, then: deletes the Subscription and the CSV,
waits until OLM removed the operator's Deployment, removes the finalizer of the old CR
(AWSEBSDriver or ManilaDriver "cluster") before deleting it so the old operator's uninstall
never runs, and creates the ClusterCSIDriver the CSO-era operator watches. It deletes no
operand: every driver Deployment, DaemonSet, CSIDriver, StorageClass, Secret and namespace stays.

It checks each operand the CSO-era operator adopts by name. The CSO-era EBS operator runs the
driver in openshift-cluster-csi-drivers, so it cannot adopt the OLM-era EBS driver: the plan says
what the admin must do afterwards, and --accept-namespace-move acknowledges it.

Only the plan is printed unless --confirm. Running it again resumes an interrupted
migration from its record.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return m.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Driver, "driver", "", "the driver to migrate: ebs or manila")
	f.BoolVar(&m.AcceptNamespaceMove, "accept-namespace-move", false, "EBS only: acknowledge that the OLM-era driver is not adopted and must be removed by hand afterwards")
	flags.BindMigrate(cmd, &m.Options, 5*time.Minute)
	_ = cmd.MarkFlagRequired("driver")
	return cmd
}
