package catalog

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/catalog/render"
)

func newGenerate() *cobra.Command {
	g := &render.Generate{}
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write the community and certified file-based catalogs",
		Long: `Renders every bundle directory with operator-registry (no image pulls) and writes two
file-based catalogs with declcfg: <output>/community (the community aws-efs-operator) and
<output>/certified (the supported EFS operator in the same package and channels, AWS EBS and
Manila), each with the <output>/<catalog>.Dockerfile that opm generates for catalog images.

Channel entries carry replaces, skips and skipRange as the definitions say. Offline catalogs
(the default) leave bundle images empty and embed the manifests, which OLM installs with no
registry; --bundle-image writes published catalogs whose bundles point at images.

The catalogs are validated in memory (opm's rules, the graph checks, the community->certified
upgrade) before anything is written; on any problem nothing is written.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.Operators = drivers.All()
			g.Out = cmd.OutOrStdout()
			return g.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&g.BundleDir, "bundles", "bundle", "directory of the bundle directories (<package>/<version>/)")
	cmd.Flags().StringVar(&g.OutputDir, "output-dir", "catalog", "directory that receives the catalogs")
	cmd.Flags().StringVar(&g.BundleImage, "bundle-image", "", "bundle image template for published catalogs, e.g. 'registry.example/{{.Package}}-bundle:v{{.Version}}'")
	fills(cmd.Flags(), "bundle-image", "BundleImage")
	return cmd
}
