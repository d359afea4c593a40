package catalog

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/diff"
	"github.com/csi-olm/csi-olm/internal/exitcode"
)

func newDiff() *cobra.Command {
	d := &diff.Diff{}
	cmd := &cobra.Command{
		Use:   "diff <old-catalog> <new-catalog>",
		Short: "What changed between two catalogs, and which changes strand installed users",
		Long: `Compares two file-based catalogs: packages, channels, bundles and upgrade edges added or
removed, channel heads moved, default channels changed, deprecations added or removed.

A change is breaking (!) when it makes things worse for a user of the old catalog: a package or
channel removed (renames included: Subscriptions name their channel), a default channel that no
longer exists, a channel head moved to a lower version, or a bundle of the old catalog that OLM
took to the head and now strands, or now takes less far. That is not guessed from the edges:
each old bundle is installed, and OLM's own resolver is asked where it goes through the old
catalog and through the new, as ` + "`csi-olm catalog simulate`" + ` does. A start the old catalog
already stranded is listed apart ("already stranded before this change") and is no change. Only
packages whose content changed, or whose dependencies' providers changed, are resolved.

Dependencies resolve as on a cluster: --with-catalog, --existing-operator and --existing-api, as
for simulate, describe the rest of it, the same for both catalogs. A start whose dependency
nothing provides, in both, is no change.

--breaking prints only the breaking changes and exits 1 when there is one.

Catalogs are directories or catalog images (registry.example/catalog:tag), as for simulate.

Output (-o): text, json, or a package's graph with the changes marked (added green, removed
red and dashed): dot, mermaid, svg, png.

--olm v1 judges for OLM v1's users instead, ClusterExtensions, with operator-controller's rule
(see ` + "`csi-olm catalog simulate --help`" + `): each bundle of the old catalog installed by a
ClusterExtension naming its channel, and by one naming no channel, is asked where it goes through
the old catalog and through the new, each a ClusterCatalog beside the --with-catalog ones ("head"
becomes "latest": what a new ClusterExtension with the same spec installs). A default channel
removed breaks nothing there: operator-controller does not read it. --existing-operator and
--existing-api are OLM v0's and refused.`,
		Example: `  csi-olm catalog diff old/catalog/certified/v4.11 catalog/certified/v4.11
  csi-olm catalog diff --breaking old/catalog/certified catalog/certified    # two trees, minor by minor
  csi-olm catalog diff old/catalog/certified/v4.11 catalog/certified/v4.11 -o svg --package aws-efs-operator > diff.svg
  csi-olm catalog diff --breaking --olm v1 old/catalog/certified catalog/certified`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			d.Old, d.New = args[0], args[1]
			d.Out = cmd.OutOrStdout()
			return d.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&d.Breaking, "breaking", false, "report only changes that strand installed users; exit non-zero when there is one")
	f.StringVarP(&d.Output, "output", "o", "text", "output: "+strings.Join(diff.Formats, ", "))
	f.StringVar(&d.Package, "package", "", "package a picture shows (default: the only one that changed)")
	fills(f, "package", "Package")
	fills(f, "output", "Output")
	environmentFlags(f, &d.Environment)
	f.StringVar(&d.OLM, "olm", "v0", "the OLM whose users are judged: v0 (Subscriptions, OLM's catalog operator) or v1 (ClusterExtensions, operator-controller)")
	fills(f, "olm", "OLM")
	cmd.Long += "\n\n" + exitcode.Help("with --breaking, a change strands users of the old catalog")
	return cmd
}
