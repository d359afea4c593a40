package migrate

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/migrate/subscription"
)

func newSubscription() *cobra.Command {
	m := &subscription.Migrate{}
	cmd := &cobra.Command{
		Use:   "subscription",
		Short: "Move the community aws-efs-operator's Subscription to the certified catalog",
		Long: `Finds the Subscription of package aws-efs-operator in any namespace, asks the target
catalog's registry whether a bundle of the package upgrades from the installed CSV (replaces,
skips or skipRange), and prints the plan. With --confirm it records the plan and the
Subscription's original spec in a ConfigMap next to the Subscription, changes only spec.source,
spec.sourceNamespace (and spec.channel when the plan says so), follows OLM's upgrade until the
new CSV Succeeded and the Subscription is AtLatestKnown, and checks that the EFS driver's
DaemonSet kept running and every Ready SharedVolume stayed Ready.

Running it again resumes an interrupted migration from its record. On any failure it prints how
to put the Subscription back on its original catalog.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return m.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Source, "source", "redhat-operators", "target CatalogSource")
	f.StringVar(&m.SourceNamespace, "source-namespace", "openshift-marketplace", "namespace of the target CatalogSource")
	f.StringVar(&m.Channel, "channel", "", "target channel (default: the Subscription's channel, or the package's default channel when the target has no such channel)")
	f.StringVar(&m.RegistryAddress, "registry-address", "", "host:port of the target catalog's registry (default: its spec.address, else a port-forward to its registry pod)")
	flags.BindMigrate(cmd, &m.Options, 10*time.Minute)
	return cmd
}
