// Package images wires `csi-olm images`.
package images

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/images/registry"
	"github.com/csi-olm/csi-olm/internal/version"
	"github.com/csi-olm/csi-olm/release"
)

// NewCommand returns the images verb.
func NewCommand() *cobra.Command {
	a := &release.Images{Client: &registry.Client{}}
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build the operator, bundle and catalog images of the tree, into an OCI layout or a registry",
		Long: `Builds, without a container daemon, the images of the tree as it is (its images are not
pinned; ` + "`csi-olm release`" + ` does that):

  <prefix>/aws-efs-csi-driver-operator:<version>   from --operator-binary, one per platform
  <prefix>/<package>-bundle:v<version>             one per bundle directory under --bundles
  <prefix>/<catalog>-catalog:<version>             one per catalog directory under --catalogs

The prefix is --registry, where the images are pushed, or localhost/csi-olm in the OCI layout
--oci-layout (skopeo, podman and crane read it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Out, a.Client.Progress = cmd.OutOrStdout(), flags.Progress(cmd)
			return a.Run(cmd.Context())
		},
	}
	v := version.Get()
	cmd.Flags().StringArrayVar(&a.OperatorBinaries, "operator-binary", nil, "statically linked EFS operator binary, once per platform")
	cmd.Flags().StringVar(&a.Version, "version", v.Version, "version: the operator and catalog image tag and label")
	cmd.Flags().StringVar(&a.Revision, "revision", v.Commit, "source revision label of the operator image")
	cmd.Flags().StringVar(&a.OPM, "opm", os.Getenv("CSI_OLM_OPM"), "statically linked opm for the catalog images (hack/tools.sh opm)")
	cmd.Flags().StringVar(&a.GRPCHealthProbe, "grpc-health-probe", os.Getenv("CSI_OLM_GRPC_HEALTH_PROBE"), "statically linked grpc_health_probe for the catalog images (hack/tools.sh grpc_health_probe)")
	cmd.Flags().StringVar(&a.Bundles, "bundles", "bundle", "directory of <package>/<version>/ bundles")
	cmd.Flags().StringVar(&a.Catalogs, "catalogs", "catalog", "directory of catalog directories")
	cmd.Flags().StringVar(&a.Registry, "registry", "", "repository prefix to push the images under")
	cmd.Flags().StringVar(&a.OCILayout, "oci-layout", "", "OCI layout directory to write the images to (replaced)")
	cmd.Flags().StringVarP(&a.Output, "output", "o", "text", "report: text (a line per image), json or yaml")
	return cmd
}
