// Package version is the `csi-olm version` verb.
package version

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/internal/version"
)

// NewCommand returns the verb.
func NewCommand() *cobra.Command {
	v := &version.Print{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary and of the libraries it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v.Out = cmd.OutOrStdout()
			return v.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&v.Output, "output", "o", "text", "output format: text or json")
	return cmd
}
