// Package migrate holds what the `csi-olm migrate` verbs share on their command line; the verbs
// are its subpackages.
package migrate

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/internal/kube"
)

// Options are the flags and outputs every migrate verb has.
type Options struct {
	kube.ClusterOptions
	// Output is the plan's format: text, yaml or json.
	Output string
	// Timeout bounds each step that waits.
	Timeout time.Duration
	// Out receives the plan and the outcome, Progress the steps as they run.
	Out, Progress io.Writer
}

// Bind registers the shared flags on a verb's command, and points the outputs at the
// command's when it runs.
func (o *Options) Bind(cmd *cobra.Command, timeout time.Duration) {
	o.ClusterOptions.Bind(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "text", "plan format: text, yaml or json")
	f.DurationVar(&o.Timeout, "timeout", timeout, "how long to wait for OLM at each step")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		o.Out, o.Progress = cmd.OutOrStdout(), cmd.ErrOrStderr()
	}
}
