// Package release wires `csi-olm release`.
package release

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/images/registry"
	"github.com/csi-olm/csi-olm/internal/version"
	"github.com/csi-olm/csi-olm/release"
)

// NewCommand returns the release verb.
func NewCommand() *cobra.Command {
	r := &release.Release{Client: &registry.Client{}}
	var mirrors []string
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Build and push the images, pin every image by digest, and write the pinned bundles and catalogs",
		Long: `Publishes a release:

 1. builds the EFS operator image from --operator-binary (one statically linked binary per
    platform) and pushes it where the newest EFS release references it;
 2. asks the registries for the digest of every operator and operand image of every release,
    and checks each serves the platforms its operator declares;
 3. writes the bundles with every image pinned, builds one bundle image per bundle and pushes
    it under --registry;
 4. writes the catalogs, one per OpenShift minor, with the pushed bundle images by digest,
    builds one catalog image per catalog and minor (the catalog under /configs, served by opm)
    and pushes it under --registry, tagged with the minor's index (certified-catalog:v4.11);
 5. writes images.txt (every image), catalogs.txt (the catalog images, one
    "<catalog> <minor> <image@digest>" line each) and an oc-mirror imageset-config.yaml next to
    bundle/ and catalog/ in --output-dir;
 6. with --cli-binary, writes csi-olm's binaries and their SHA256SUMS under cli/, pushes the
    csi-olm image (csi-olm and opm on an empty base, <registry>/csi-olm:<version>) and writes
    it, by digest, to tools.txt.

Nothing is written unless every step succeeded. --mirror SOURCE=MIRROR reads and pushes the
images of SOURCE at MIRROR instead (a registry that stands in for quay.io, say); the pinned
references keep the SOURCE names, as clusters pull them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, m := range mirrors {
				parsed, err := registry.ParseMirror(m)
				if err != nil {
					return fmt.Errorf("--mirror: %w", err)
				}
				r.Client.Mirrors = append(r.Client.Mirrors, parsed)
			}
			r.Operators = drivers.All()
			r.Out, r.Client.Progress = cmd.OutOrStdout(), flags.Progress(cmd)
			return r.Run(cmd.Context())
		},
	}
	v := version.Get()
	cmd.Flags().StringVar(&r.Registry, "registry", "", "repository prefix the bundle and catalog images are pushed under, e.g. quay.io/csi-olm")
	cmd.Flags().StringArrayVar(&r.CLIBinaries, "cli-binary", nil, "csi-olm's own binary, once per platform (make cli-binaries builds linux and darwin, amd64 and arm64): the release carries them with SHA256SUMS, and the one built for opm's platform becomes the csi-olm image")
	cmd.Flags().StringArrayVar(&r.OperatorBinaries, "operator-binary", nil, "statically linked EFS operator binary, once per platform (make operator-binaries builds them); without it, the image the newest EFS release references must already be in the registry (built from its Containerfile, say)")
	cmd.Flags().StringVar(&r.Version, "version", v.Version, "version label of the operator image")
	cmd.Flags().StringVar(&r.Revision, "revision", v.Commit, "source revision label of the operator image")
	cmd.Flags().StringVar(&r.OPM, "opm", os.Getenv("CSI_OLM_OPM"), "statically linked opm for the catalog images (hack/tools.sh opm)")
	cmd.Flags().StringVar(&r.GRPCHealthProbe, "grpc-health-probe", os.Getenv("CSI_OLM_GRPC_HEALTH_PROBE"), "statically linked grpc_health_probe for the catalog images (hack/tools.sh grpc_health_probe)")
	cmd.Flags().StringArrayVar(&mirrors, "mirror", nil, "SOURCE=MIRROR: read and push the images of SOURCE at MIRROR (repeatable)")
	cmd.Flags().StringVar(&r.OutputDir, "output-dir", "release", "directory the release is written to (replaced)")
	cmd.Flags().StringVarP(&r.Output, "output", "o", "text", "report: text (a line per image pushed), json or yaml (every image pushed, once all is done)")
	_ = cmd.MarkFlagRequired("registry")
	return cmd
}
