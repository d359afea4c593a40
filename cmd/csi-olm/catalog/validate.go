package catalog

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/internal/exitcode"
)

func newValidate() *cobra.Command {
	v := &validation.Validate{}
	cmd := &cobra.Command{
		Use:   "validate <catalog>",
		Short: "Validate a file-based catalog: opm's rules plus upgrade-graph checks",
		Long: `Applies exactly the rules of ` + "`opm validate`" + ` (declcfg + ConvertToModel, package by package),
then checks what opm does not: every bundle has an upgrade path to its channel head (through
replaces, skips or skipRange), every default channel exists and has a head, every skipRange
parses, every replaces/skips names a real bundle, and deprecations refer to what exists.

--community DIR adds the cross-catalog checks: edges may point into the community catalog, and
for each package both carry, the head of each community channel is older than this catalog's
head, which upgrades every community version directly. --bundles DIR checks that embedded bundle
manifests agree with the bundle directories.

The catalog is a directory, a tree of per-minor catalogs, or a catalog image
(registry.example/catalog:tag), as for every catalog verb.

Prints every problem with its rule, its package, channel or bundle and file; exits 1 on errors.

Each check is a rule with a stable name, in the text ([rule]) and in -o json ("rule"). --rule
NAME=SETTING sets one: off, on (one that is off by default), warning (its errors become
warnings) or error (its warnings become errors). The rules, and the checks of the field's
catalog pipelines they match (docs/catalogs.md#rules):

` + validation.RulesHelp(),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v.Dir = args[0]
			v.Out = cmd.OutOrStdout()
			return v.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&v.Community, "community", "", "community catalog directory this catalog's packages upgrade from")
	cmd.Flags().StringVar(&v.Bundles, "bundles", "", "bundle directory tree the embedded bundle objects must agree with")
	cmd.Flags().StringArrayVar(&v.Rules, "rule", nil, "NAME=SETTING: turn a rule off or on, or make its problems warnings or errors (off, on, warning, error); repeatable")
	cmd.Flags().StringArrayVar(&v.AllowedRegistries, "allowed-registry", nil, "a prefix every bundle image must start with, such as quay.io/community-operator-pipeline-prod/; repeatable")
	cmd.Flags().StringVarP(&v.Output, "output", "o", "text", "output: text, or json or yaml (opm validate's passed and error.message, and every problem)")
	fills(cmd.Flags(), "output", "Output")
	fills(cmd.Flags(), "community", "Community")
	fills(cmd.Flags(), "bundles", "Bundles")
	fills(cmd.Flags(), "rule", "Rules")
	fills(cmd.Flags(), "allowed-registry", "AllowedRegistries")
	cmd.Long += "\n\n" + exitcode.Help("a catalog has errors")
	return cmd
}
