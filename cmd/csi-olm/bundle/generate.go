package bundle

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/generate"
)

func newGenerate() *cobra.Command {
	g := &generate.Generate{}
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write the OLM bundles of every operator definition",
		Long: `Builds a registry+v1 bundle for every release of every operator definition
(manifests/, metadata/annotations.yaml, bundle.Dockerfile), validates them all, and only then
replaces each package directory under --output. Invalid definitions or bundles that fail
validation write nothing. It then writes the drivers' external-storage test manifests for
openshift-tests and e2e.test (drivers/efsdriver/testing/manifest.yaml under --output).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.Operators = drivers.All()
			g.TestManifests = drivers.TestManifests()
			g.Out = cmd.OutOrStdout()
			return g.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&g.OutputDir, "output-dir", "bundle", "directory that receives <package>/<version>/")
	return cmd
}
