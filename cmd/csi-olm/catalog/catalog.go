// Package catalog is the `csi-olm catalog` verb group.
package catalog

import "github.com/spf13/cobra"

// NewCommand returns the group with its verbs.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Generate, validate, draw, simulate and compare file-based catalogs",
	}
	cmd.AddCommand(newGenerate(), newValidate(), newGraph(), newImages(), newSimulate(), newDiff(), newClusterUpgrade())
	for _, verb := range cmd.Commands() {
		run := verb.RunE
		verb.RunE = func(cmd *cobra.Command, args []string) error { return withHints(cmd, run(cmd, args)) }
	}
	return cmd
}
