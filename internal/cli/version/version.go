// Package version is the `version` verb.
package version

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/internal/version"
)

// Version prints build information.
type Version struct {
	Output string
	Out    io.Writer
}

// NewCommand returns the cobra command of the verb.
func NewCommand() *cobra.Command {
	v := &Version{}
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

// Run prints the version.
func (v *Version) Run(_ context.Context) error {
	info := version.Get()
	switch v.Output {
	case "json":
		enc := json.NewEncoder(v.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	case "text":
		fmt.Fprintf(v.Out, "version:  %s\n", info.Version)
		if info.Commit != "" {
			fmt.Fprintf(v.Out, "commit:   %s\n", info.Commit)
		}
		fmt.Fprintf(v.Out, "go:       %s\nplatform: %s\n", info.GoVersion, info.Platform)
		deps := make([]string, 0, len(info.Dependencies))
		for d := range info.Dependencies {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		for _, d := range deps {
			fmt.Fprintf(v.Out, "%s %s\n", d, info.Dependencies[d])
		}
		return nil
	default:
		return fmt.Errorf("unknown output format %q: use text or json", v.Output)
	}
}
