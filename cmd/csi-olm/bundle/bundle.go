// Package bundle is the `csi-olm bundle` verb group.
package bundle

import (
	"github.com/spf13/cobra"
)

// NewCommand returns the group with its verbs.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Generate and validate OLM registry+v1 bundles",
	}
	cmd.AddCommand(newGenerate(), newValidate())
	return cmd
}
