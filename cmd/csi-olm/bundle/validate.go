package bundle

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/lint"
	"github.com/csi-olm/csi-olm/internal/exitcode"
)

func newValidate() *cobra.Command {
	v := &lint.Validate{}
	var olm string
	cmd := &cobra.Command{
		Use:   "validate <dir>...",
		Short: "Validate OLM bundle directories",
		Long: `Validates each bundle directory given, or every bundle below a directory, with
operator-framework/api's default bundle validators, the OperatorHub, standard capabilities,
standard categories and good-practices validators, and csi-olm's own checks (images named by a
release tag or a digest, never latest, and listed in relatedImages; no wildcard permissions;
bundle.Dockerfile labels equal to metadata/annotations.yaml). With --release, every image must be
pinned by digest, as in the bundles ` + "`csi-olm release`" + ` writes. With --olm v1, every bundle must also be one OLM v1
(operator-controller v1.11.0) installs: AllNamespaces install mode, no dependencies, no owned API
services, only supported kinds in manifests/, well-formed webhook definitions and the rest of the
checks operator-controller runs when it converts a registry+v1 bundle; each such error names its
rule (olmv1/...). Prints every problem of every bundle with the file it comes from; a path
without a bundle is an error too. Warnings that an operator definition explains are shown as
explained and do not count.

Exits 1 when a bundle has errors, or with --strict, unexplained warnings.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch olm {
			case "v0":
			case "v1":
				v.OLMv1 = true
			default:
				return fmt.Errorf("--olm: unknown OLM %q: use v0 (Subscriptions, OLM's catalog operator) or v1 (ClusterExtensions, operator-controller)", olm)
			}
			v.Paths = args
			v.Explain = lint.ExplainerFor(drivers.All())
			v.Out = cmd.OutOrStdout()
			return v.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&v.Strict, "strict", false, "fail on warnings that no waiver explains")
	cmd.Flags().BoolVar(&v.Release, "release", false, "check released bundles: every image pinned by digest")
	cmd.Flags().StringVarP(&v.Output, "output", "o", "text", "output: text, or json or yaml (operator-sdk's passed and outputs, and every bundle's problems)")
	cmd.Flags().StringVar(&olm, "olm", "v0", "the OLM that installs the bundles: v0, or v1 to also check that OLM v1 (operator-controller v1.11.0) can install every bundle")
	cmd.Long += "\n\n" + exitcode.Help("a bundle has errors, or with --strict unexplained warnings")
	return cmd
}
