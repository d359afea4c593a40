// Package flags binds the options that several csi-olm verbs share, so each flag has one name,
// default and help text.
package flags

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/migrate"
)

// BindCluster registers --kubeconfig and --dry-run. --dry-run defaults to true: these verbs change
// production clusters, so changing one is asked for explicitly.
func BindCluster(cmd *cobra.Command, o *kube.ClusterOptions) {
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", true, "print the plan without changing anything")
}

// BindMigrate registers the flags every migrate verb has, and points the verb's outputs at the
// command's when it runs.
func BindMigrate(cmd *cobra.Command, o *migrate.Options, timeout time.Duration) {
	BindCluster(cmd, &o.ClusterOptions)
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "text", "plan format: text, yaml or json")
	f.DurationVar(&o.Timeout, "timeout", timeout, "how long to wait for OLM at each step")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		o.Out, o.Progress = cmd.OutOrStdout(), cmd.ErrOrStderr()
	}
}
