package catalog

import (
	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/clusterupgrade"
	"github.com/csi-olm/csi-olm/internal/exitcode"
)

func newClusterUpgrade() *cobra.Command {
	a := &clusterupgrade.ClusterUpgrade{}
	cmd := &cobra.Command{
		Use:   "cluster-upgrade <tree>",
		Short: "Follow every installed operator through each cluster upgrade of a tree of per-minor catalogs",
		Long: `Takes a tree of per-minor catalogs (<tree>/v4.N/, one catalog per OpenShift minor, as
` + "`make catalog`" + ` writes them and the field's catalog repositories lay them out) and, for every
bundle a cluster at 4.N can run, subscribed to each channel that holds it, says what becomes of
it when the cluster moves to 4.N+1 and its catalog becomes 4.N+1's:

  moves / stays   where OLM takes it in 4.N+1's catalog (OLM's own resolver decides)
  stranded        OLM cannot move it, and why: its package or channel is gone, or nothing in
                  4.N+1's catalog replaces, skips or has a skipRange holding it
  unresolvable    OLM's resolver fails on the Subscription (its ResolutionFailed)
  blocks          its olm.maxOpenShiftVersion keeps the cluster at 4.N: OLM reports the cluster
                  not upgradeable (IncompatibleOperatorsInstalled) until the operator is upgraded

A minor whose next minor the tree lacks is listed as not followed. Exits 1 when an install
is stranded, unresolvable or blocks the upgrade; with --since OLD_TREE, only when one is that is
not so in OLD_TREE (what OLD_TREE had already is counted apart), as ` + "`catalog diff --breaking`" + `
fails only on what a change breaks.`,
		Example: `  csi-olm catalog cluster-upgrade catalog/certified
  csi-olm catalog cluster-upgrade catalog/certified --since old/catalog/certified
  csi-olm catalog cluster-upgrade catalogs -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Tree, a.Out = args[0], cmd.OutOrStdout()
			return a.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.Since, "since", "", "an earlier tree: fail only on installs stuck now and not there")
	f.StringVarP(&a.Output, "output", "o", "text", "output: text, json")
	fills(f, "since", "Since")
	fills(f, "output", "Output")
	cmd.Long += "\n\n" + exitcode.Help("an install is stuck by a cluster upgrade (with --since, newly stuck)")
	return cmd
}
