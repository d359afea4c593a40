// Package catalog is the `csi-olm catalog` verb group.
package catalog

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
)

// NewCommand returns the group with its verbs.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Generate, validate, draw, simulate and compare file-based catalogs",
	}
	cmd.AddCommand(newGenerate(), newValidate(), newGraph(), newImages(), newSimulate(), newDiff(), newClusterUpgrade())
	for _, verb := range cmd.Commands() {
		run := verb.RunE
		var reg *load.Registry
		if verb.Name() != "generate" {
			reg = registryFlags(verb)
		}
		verb.RunE = func(cmd *cobra.Command, args []string) error {
			if reg != nil {
				reg.Progress = flags.Progress(cmd)
				cmd.SetContext(load.WithRegistry(cmd.Context(), *reg))
			}
			return withHints(cmd, run(cmd, args))
		}
	}
	return cmd
}

// registryFlags are how a verb that reads catalog images pulls them, named as opm names them.
func registryFlags(cmd *cobra.Command) *load.Registry {
	r := &load.Registry{}
	f := cmd.Flags()
	f.BoolVar(&r.UseHTTP, "use-http", false, "pull catalog images over plain HTTP")
	f.BoolVar(&r.SkipTLSVerify, "skip-tls-verify", false, "pull catalog images without verifying the registry's certificate")
	f.StringVar(&r.CAFile, "ca-file", "", "PEM file of certificate authorities the registry's certificate may chain to, beside the system's")
	return r
}
