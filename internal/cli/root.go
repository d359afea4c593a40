// Package cli assembles the csi-olm command tree from the verb packages.
package cli

import (
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	bundlegenerate "github.com/csi-olm/csi-olm/bundle/generate"
	bundlevalidate "github.com/csi-olm/csi-olm/bundle/validate"
	cataloggenerate "github.com/csi-olm/csi-olm/catalog/generate"
	cataloggraph "github.com/csi-olm/csi-olm/catalog/graph"
	catalogvalidate "github.com/csi-olm/csi-olm/catalog/validate"
	"github.com/csi-olm/csi-olm/internal/cli/version"
	migratecso "github.com/csi-olm/csi-olm/migrate/cso"
	migratesubscription "github.com/csi-olm/csi-olm/migrate/subscription"
	efsrelease "github.com/csi-olm/csi-olm/operator/release"
	svrelease "github.com/csi-olm/csi-olm/sharedvolume/release"
	devdown "github.com/csi-olm/csi-olm/test/dev/down"
	devup "github.com/csi-olm/csi-olm/test/dev/up"
)

// NewRoot returns the csi-olm root command.
func NewRoot() *cobra.Command {
	// operator-registry's bundle parser logs every optional file it does not find.
	logrus.SetLevel(logrus.WarnLevel)
	root := &cobra.Command{
		Use:   "csi-olm",
		Short: "Build, check and migrate the OLM packages of OpenShift's optional CSI drivers",
		Long: `csi-olm generates and validates the OLM bundles and file-based catalogs of the AWS EFS,
AWS EBS and OpenStack Manila CSI driver operators, and migrates clusters between them.`,
		SilenceUsage: true,
	}
	bundle := &cobra.Command{
		Use:   "bundle",
		Short: "Generate and validate OLM registry+v1 bundles",
	}
	bundle.AddCommand(bundlegenerate.NewCommand(), bundlevalidate.NewCommand())
	catalog := &cobra.Command{
		Use:   "catalog",
		Short: "Generate, validate and draw file-based catalogs",
	}
	catalog.AddCommand(cataloggenerate.NewCommand(), catalogvalidate.NewCommand(), cataloggraph.NewCommand())
	efs := &cobra.Command{
		Use:   "efs",
		Short: "Operate on a cluster's AWS EFS CSI driver installation",
	}
	efs.AddCommand(efsrelease.NewCommand(), svrelease.NewCommand())
	migrate := &cobra.Command{
		Use:   "migrate",
		Short: "Move installed operators: community EFS to the certified catalog, OLM-installed EBS and Manila to the cluster-storage-operator",
	}
	migrate.AddCommand(migratesubscription.NewCommand(), migratecso.NewCommand())
	dev := &cobra.Command{
		Use:   "dev",
		Short: "Run a local Kubernetes cluster with OLM for trying the operators by hand",
	}
	dev.AddCommand(devup.NewCommand(), devdown.NewCommand())
	root.AddCommand(version.NewCommand(), bundle, catalog, efs, migrate, dev)
	return root
}
