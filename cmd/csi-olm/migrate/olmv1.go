package migrate

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/migrate/olmv1"
)

func newOLMv1() *cobra.Command {
	m := &olmv1.Migrate{}
	cmd := &cobra.Command{
		Use:   "olm-v1",
		Short: "Move an operator from OLM v0 (Subscription, CSV) to an OLM v1 ClusterExtension of the same version, and back",
		Long: `Finds the package's Subscription and installed CSV, reads the named ClusterCatalog's content
and refuses, before changing anything, when the catalog does not serve the installed version, when
OLM v1 cannot install that bundle (the rules of ` + "`csi-olm bundle validate --olm v1`" + `), or when
the installer ServiceAccount lacks a permission OLM v1 needs. The plan names every object OLM v1
adopts (same UIDs), what it creates, what goes with the CSV, what stays untouched, the node
plugin pods that must not restart, the custom resources, volumes and claims kept, and where OLM
v1 takes the extension on its next upgrade.

With --confirm it records the plan in a ConfigMap next to the Subscription, deletes the
Subscription (the CSV keeps running), marks every object OLM v1 adopts with Helm's ownership
metadata for the ClusterExtension's release, deletes the CSV with the orphan policy (OLM v0 lets
go of every object and deletes none; its cluster RBAC keeps granting the operator), creates the
ClusterExtension pinned to the installed version, waits until OLM v1 reports it Installed and
controls every adopted object, deletes OLM v0's own RBAC and checks that everything kept its UID.

Running it again resumes an interrupted migration. --back goes back to OLM v0 from any step: it
deletes the ClusterExtension orphaning what it installed, takes OLM v1's marks off, creates the
Subscription again starting at the same CSV and waits for OLM v0 to run it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return m.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.Package, "package", efs.Package, "the OLM package to move")
	f.StringVar(&m.Catalog, "catalog", "", "the ClusterCatalog OLM v1 installs from; it must serve the installed version")
	f.StringVar(&m.Extension, "extension", "", "the ClusterExtension's name (default: the package's)")
	f.StringVar(&m.ServiceAccount, "service-account", "", "the ServiceAccount, in the install namespace, OLM v1 installs with (default: <extension>-installer)")
	f.BoolVar(&m.Back, "back", false, "go back to OLM v0 from the migration recorded on the cluster, from whatever step it reached")
	flags.BindMigrate(cmd, &m.Options, 10*time.Minute)
	return cmd
}
