// Package cli assembles the csi-olm command tree from the verb packages.
package cli

import (
	"github.com/spf13/cobra"

	bundlegenerate "github.com/csi-olm/csi-olm/bundle/generate"
	bundlevalidate "github.com/csi-olm/csi-olm/bundle/validate"
	"github.com/csi-olm/csi-olm/internal/cli/version"
	devdown "github.com/csi-olm/csi-olm/test/dev/down"
	devup "github.com/csi-olm/csi-olm/test/dev/up"
)

// NewRoot returns the csi-olm root command.
func NewRoot() *cobra.Command {
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
	dev := &cobra.Command{
		Use:   "dev",
		Short: "Run a local Kubernetes cluster with OLM for trying the operators by hand",
	}
	dev.AddCommand(devup.NewCommand(), devdown.NewCommand())
	root.AddCommand(version.NewCommand(), bundle, dev)
	return root
}
