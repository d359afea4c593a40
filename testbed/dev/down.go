// Package down is the `csi-olm dev down` verb.
package dev

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/csi-olm/csi-olm/testbed"
)

// Down stops the dev cluster.
type Down struct {
	Home string
	// KeepData keeps the cluster's directory (etcd data, logs) for inspection.
	KeepData bool
	Out      io.Writer
}

// Run stops every process of the recorded cluster, etcd last, and forgets it.
func (d *Down) Run(_ context.Context) error {
	stateFile := StateFile(d.Home)
	st, err := ReadState(stateFile)
	if err != nil {
		return err
	}
	if st == nil {
		fmt.Fprintln(d.Out, "no dev cluster is running")
		return nil
	}
	if err := testbed.StopState(*st); err != nil {
		return fmt.Errorf("stopping the dev cluster (its state stays in %s): %w", stateFile, err)
	}
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
