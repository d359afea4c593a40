// Package flags binds the options that several csi-olm verbs share, so each flag has one name,
// default and help text.
package flags

import (
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/migrate"
)

// BindQuiet registers --quiet on the root: it silences the progress lines long work writes to
// stderr, and nothing else.
func BindQuiet(root *cobra.Command) {
	root.PersistentFlags().BoolP("quiet", "q", false, "print no progress on stderr (pushes, pulls, pins, whole-catalog simulations)")
}

// Progress is where a verb writes its progress: stderr, or nowhere with --quiet.
func Progress(cmd *cobra.Command) io.Writer {
	if quiet, _ := cmd.Flags().GetBool("quiet"); quiet {
		return io.Discard
	}
	return cmd.ErrOrStderr()
}

// BindConnection registers kubectl's connection flags, from cli-runtime: --kubeconfig and
// --context, and with namespaced, -n/--namespace.
func BindConnection(cmd *cobra.Command, o *kube.ClusterOptions, namespaced bool) {
	o.ConfigFlags(namespaced).AddFlags(cmd.Flags())
}

// BindCluster registers the connection flags and --confirm, for the verbs that change a cluster.
// Without --confirm they only print their plan, as oc's own verbs that delete or rewrite what
// they find (oc adm prune, oc adm migrate) do: these verbs change production clusters, so a
// change is asked for explicitly. --dry-run=false, the old spelling, still works.
func BindCluster(cmd *cobra.Command, o *kube.ClusterOptions, namespaced bool) {
	BindConnection(cmd, o, namespaced)
	o.DryRun = true
	f := cmd.Flags()
	f.Var((*confirm)(&o.DryRun), "confirm", "carry the plan out; without it, only print the plan")
	f.Lookup("confirm").NoOptDefVal = "true"
	f.BoolVar(&o.DryRun, "dry-run", true, "print the plan without changing anything")
	_ = f.MarkDeprecated("dry-run", "use --confirm to carry the plan out")
}

// confirm is --confirm: the negation of DryRun.
type confirm bool

func (c *confirm) String() string { return strconv.FormatBool(!bool(*c)) }

func (c *confirm) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*c = confirm(!v)
	return nil
}

func (*confirm) Type() string { return "bool" }

// BindMigrate registers the flags every migrate verb has, and points the verb's outputs at the
// command's when it runs.
func BindMigrate(cmd *cobra.Command, o *migrate.Options, timeout time.Duration) {
	BindCluster(cmd, &o.ClusterOptions, false)
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "text", "plan format: text, yaml or json")
	f.DurationVar(&o.Timeout, "timeout", timeout, "how long to wait for OLM at each step")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		o.Out, o.Progress = cmd.OutOrStdout(), Progress(cmd)
	}
}
