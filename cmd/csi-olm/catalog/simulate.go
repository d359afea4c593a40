package catalog

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/internal/exitcode"
)

func newSimulate() *cobra.Command {
	a := &simulate.Simulate{}
	cmd := &cobra.Command{
		Use:   "simulate <catalog>",
		Short: "Predict, offline, the bundles OLM installs from an installed CSV up to the channel head",
		Long: `Runs OLM's own resolver (operator-lifecycle-manager v0.46.0) against the catalog, served in
this process by operator-registry as ` + "`opm serve`" + ` serves it, and prints each bundle OLM installs
from a start up to where it stops: the edge each step takes (replaces, skips or skipRange), every
other candidate and why OLM passed it over (skipped bundles are never upgrade targets; the
candidate nearest the channel head wins), the deprecations OLM will report, and why OLM stops
short of the head when it does.

Where to start, one of:
  --installed CSV   a CSV as installed by a Subscription to --channel (default: the package's
                    default channel); --installed-from names the catalog it came from when it is
                    not <catalog>, as after a community -> certified source switch
  --all             every bundle of every channel of <catalog>; with --installed-from, every
                    bundle of that catalog whose package and channel <catalog> has
  --from-cluster    every Subscription of the cluster (--kubeconfig) whose package the catalog
                    has, from the CSV it installed, as if its source served <catalog>

The rest of the cluster, which OLM resolves dependencies against (olm.gvk.required,
olm.package.required, olm.constraint) across every CatalogSource by priority and against what is
installed:
  --with-catalog DIR|IMAGE[,priority=N]   another CatalogSource (repeatable)
  --existing-operator PACKAGE@VERSION     an installed operator: the bundle of that package and
                                          version in a catalog, or else only the package
  --existing-api GROUP/VERSION/KIND       an API an installed operator provides
--from-cluster reads the cluster's other installed CSVs as well. A start whose dependency nothing
provides is reported with the ResolutionFailed condition OLM would give its Subscription.

Every start is printed; the verb then exits 1 when OLM cannot resolve one of them.

<catalog>, --installed-from and --with-catalog are catalog directories or catalog images
(registry.example/catalog:tag), which are pulled and read from the directory their
operators.operatorframework.io.index.configs.v1 label names.

Output (-o): text, yaml, json, or the upgrade graph with the path marked: dot, mermaid, svg, png
(svg and png drawn in-process by the Graphviz that csi-olm carries).

--olm v1 predicts OLM v1 instead (operator-controller v1.11.0, a ClusterExtension installing the
package from ClusterCatalogs), whose rule is its own: each reconcile picks, from every
ClusterCatalog, the highest version of the package in the ClusterExtension's channels (every
channel when none is given) and version range that is the installed bundle itself or names it in
its replaces or skips, or whose skipRange contains its version; bundles deprecated by the catalog
come last; the ClusterCatalog of highest priority wins and two at the same top priority are an
error; a bundle that declares a dependency is refused. The path is every bundle it rolls out until
it resolves to what is installed; "latest" is what a new ClusterExtension with the same spec
installs. With --olm v1:
  --channel CHANNEL                 spec.source.catalog.channels (repeatable; default: all)
  --version RANGE                   spec.source.catalog.version, a Masterminds/semver range
                                    (">=4.10.0, <5", "4.11.x", "~4.10")
  --upgrade-constraint-policy P     CatalogProvided (default) or SelfCertified (edges ignored:
                                    any version in range, a downgrade included)
  --with-catalog DIR|IMAGE[,priority=N]   another ClusterCatalog, with its spec.priority
  --installed CSV / --installed-from   the installed bundle, and the catalog it was installed
                                    from, which is not a ClusterCatalog of the cluster simulated
                                    (add it with --with-catalog to keep it one)
  --all                             every package's new ClusterExtension and every bundle
                                    installed (of --package only, when given)
  --from-cluster                    every OLM v0 Subscription of the cluster whose package the
                                    ClusterCatalogs carry, its installed CSV as the installed
                                    bundle: where OLM v1 takes the install once ` + "`csi-olm migrate olm-v1`" + `
                                    moved it and its version range allows an upgrade
--existing-operator and --existing-api are OLM v0's and refused.`,
		Example: `  csi-olm catalog simulate catalog/certified/v4.11 --installed aws-efs-operator.v0.0.6 --installed-from catalog/community/v4.11
  csi-olm catalog simulate catalog/community/v4.11 --all -o yaml
  csi-olm catalog simulate catalog/certified/v4.11 --installed aws-efs-operator.v0.0.6 --installed-from catalog/community/v4.11 -o svg > path.svg
  csi-olm catalog simulate catalog/certified/v4.11 --from-cluster --kubeconfig ~/.kube/config
  csi-olm catalog simulate my-catalog --all --with-catalog cert-manager-catalog,priority=10 --existing-api cert-manager.io/v1/Issuer
  csi-olm catalog simulate catalog/certified/v4.11 --olm v1 --all
  csi-olm catalog simulate catalog/certified/v4.11 --olm v1 --from-cluster --kubeconfig ~/.kube/config
  csi-olm catalog simulate catalog/certified/v4.11 --olm v1 --installed aws-efs-operator.v0.0.6 --installed-from catalog/community/v4.11 --version ">=4.11.0"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Catalog = args[0]
			a.Out, a.Progress = cmd.OutOrStdout(), flags.Progress(cmd)
			return a.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.Start.CSV, "installed", "", "the installed CSV to start from")
	f.StringVar(&a.Start.Package, "package", "", "the Subscription's package (default: the installed CSV's); with --olm v1 and --all, the only package simulated")
	f.StringArrayVar(&a.Channels, "channel", nil, "the Subscription's channel (default: the package's default channel); with --olm v1, a channel of the ClusterExtension (repeatable; default: every channel)")
	f.StringVar(&a.InstalledFrom, "installed-from", "", "catalog the installed CSV came from, when not <catalog>")
	f.StringVar(&a.Minor, "minor", "", "the OpenShift minor (4.11) whose catalog a tree of per-minor catalogs gives (default with --from-cluster: the cluster's, from its ClusterVersion)")
	f.BoolVar(&a.All, "all", false, "simulate every start the catalog offers")
	f.BoolVar(&a.FromCluster, "from-cluster", false, "start from the cluster's Subscriptions and installed CSVs")
	flags.BindConnection(cmd, &a.Cluster, true)
	f.StringVarP(&a.Output, "output", "o", "text", "output: "+strings.Join(simulate.Formats, ", "))
	f.StringVar(&a.OLM, "olm", "v0", "the OLM to predict: v0 (Subscriptions, OLM's catalog operator) or v1 (ClusterExtensions, operator-controller)")
	f.StringVar(&a.Version, "version", "", "with --olm v1, the ClusterExtension's version range (Masterminds/semver syntax)")
	f.StringVar(&a.Policy, "upgrade-constraint-policy", "", "with --olm v1, the ClusterExtension's upgrade constraint policy: CatalogProvided (default) or SelfCertified")
	environmentFlags(f, &a.Environment)
	for flag, field := range map[string]string{
		"olm": "OLM", "channel": "Channels", "version": "Version", "upgrade-constraint-policy": "Policy",
		"package": "Start.Package", "from-cluster": "FromCluster", "minor": "Minor",
	} {
		fills(f, flag, field)
	}
	cmd.MarkFlagsOneRequired("installed", "all", "from-cluster")
	cmd.MarkFlagsMutuallyExclusive("installed", "all", "from-cluster")
	cmd.Long += "\n\n" + exitcode.Help("a start does not resolve")
	return cmd
}
