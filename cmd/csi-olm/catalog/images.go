package catalog

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/mirror"
)

func newImages() *cobra.Command {
	a := &mirror.Images{}
	cmd := &cobra.Command{
		Use:   "images <catalog>",
		Short: "List every image a catalog needs, for mirroring",
		Long: `Lists every bundle and related image of a catalog (operators and operands), once each:

  list      one reference per line, for skopeo or oc image mirror
  idms      an ImageDigestMirrorSet that sends the cluster's pulls to --mirror; the images must be
            pinned by digest, as in the catalogs ` + "`csi-olm release`" + ` publishes
  imageset  an oc-mirror ImageSetConfiguration for --catalog-image, every package and channel

The catalog is a directory, a tree of per-minor catalogs, or a catalog image
(registry.example/catalog:tag), as for every catalog verb.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Catalog = args[0]
			a.Out = cmd.OutOrStdout()
			return a.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&a.Format, "output", "o", mirror.FormatList, "output: "+strings.Join(mirror.Formats, ", "))
	cmd.Flags().StringVar(&a.Mirror, "mirror", "", "registry the ImageDigestMirrorSet redirects to, e.g. mirror.example:5000")
	cmd.Flags().StringVar(&a.CatalogImage, "catalog-image", "", "catalog image the ImageSetConfiguration mirrors")
	fills(cmd.Flags(), "mirror", "Mirror")
	fills(cmd.Flags(), "catalog-image", "CatalogImage")
	cmd.Flags().StringVar(&a.Name, "name", "csi-olm", "name of the ImageDigestMirrorSet")
	return cmd
}
