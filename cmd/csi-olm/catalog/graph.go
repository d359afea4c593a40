package catalog

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/graph"
)

func newGraph() *cobra.Command {
	g := &graph.Graph{}
	cmd := &cobra.Command{
		Use:   "graph <catalog>",
		Short: "Draw the upgrade graph of each package of a catalog",
		Long: `Draws each package's upgrade graph per channel: nodes are versions, the channel head is
bold, replaces edges are solid, skips dashed and skipRange dotted. With --community, community
versions that edges come from are drawn too (dashed nodes), which shows the source switch.

Formats: dot and mermaid, and svg or png, drawn in-process by the Graphviz that csi-olm carries
(compiled to WebAssembly): the same picture on every machine, with nothing to install.
Without --output-dir the first format is printed (svg and png need --output-dir).

The catalog is a directory, a tree of per-minor catalogs, or a catalog image
(registry.example/catalog:tag), as for every catalog verb.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.Dir = args[0]
			g.Out = cmd.OutOrStdout()
			return g.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&g.Community, "community", "", "community catalog whose versions edges come from")
	cmd.Flags().StringVar(&g.Package, "package", "", "draw only this package")
	cmd.Flags().StringSliceVarP(&g.Formats, "output", "o", []string{"dot"}, "formats, comma-separated: "+strings.Join(graph.Formats, ", "))
	cmd.Flags().StringVar(&g.OutputDir, "output-dir", "", "write <catalog>-<package>.<ext> files here")
	fills(cmd.Flags(), "community", "Community")
	fills(cmd.Flags(), "output-dir", "OutputDir")
	return cmd
}
