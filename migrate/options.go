// Package migrate holds what the `csi-olm migrate` verbs share on their command line; the verbs
// are its subpackages.
package migrate

import (
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
)

// Options are the flags and outputs every migrate verb has.
type Options struct {
	Kubeconfig string
	// DryRun prints the plan and changes nothing.
	DryRun bool
	// Output is the plan's format: text, yaml or json.
	Output string
	// Timeout bounds each step that waits.
	Timeout time.Duration
	// Config, when set, is used instead of Kubeconfig.
	Config *rest.Config
	// Out receives the plan and the outcome, Progress the steps as they run.
	Out, Progress io.Writer
}

// Bind registers the shared flags on a verb's command, and points the outputs at the
// command's when it runs.
func (o *Options) Bind(cmd *cobra.Command, timeout time.Duration) {
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	f.BoolVar(&o.DryRun, "dry-run", true, "print the plan without changing anything")
	f.StringVarP(&o.Output, "output", "o", "text", "plan format: text, yaml or json")
	f.DurationVar(&o.Timeout, "timeout", timeout, "how long to wait for OLM at each step")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		o.Out, o.Progress = cmd.OutOrStdout(), cmd.ErrOrStderr()
	}
}
