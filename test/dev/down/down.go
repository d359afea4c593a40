// Package down is the `csi-olm dev down` verb.
package down

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/test/dev"
	"github.com/csi-olm/csi-olm/test/testbed"
)

// Down stops the dev cluster.
type Down struct {
	Home string
	// KeepData keeps the cluster's directory (etcd data, logs) for inspection.
	KeepData bool
	Out      io.Writer
}

// NewCommand returns the cobra command of the verb.
func NewCommand() *cobra.Command {
	d := &Down{}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster that `csi-olm dev up` started",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d.Out = cmd.OutOrStdout()
			return d.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&d.Home, "home", dev.Home(), "directory of the cluster's state and data")
	cmd.Flags().BoolVar(&d.KeepData, "keep-data", false, "keep the cluster's data and logs")
	return cmd
}

// Run stops every process of the recorded cluster, etcd last, and forgets it.
func (d *Down) Run(_ context.Context) error {
	stateFile := dev.StateFile(d.Home)
	st, err := dev.ReadState(stateFile)
	if err != nil {
		return err
	}
	if st == nil {
		fmt.Fprintln(d.Out, "no dev cluster is running")
		return nil
	}
	testbed.StopState(*st)
	if survivors := testbed.Survivors(st.Dir); len(survivors) > 0 {
		return fmt.Errorf("processes %v of the dev cluster did not stop; the state stays in %s", survivors, stateFile)
	}
	if !d.KeepData {
		if err := os.RemoveAll(st.Dir); err != nil {
			return err
		}
	}
	if err := os.Remove(stateFile); err != nil {
		return err
	}
	fmt.Fprintf(d.Out, "stopped the dev cluster (%d processes)\n", len(st.Processes))
	return nil
}
