// Package migrate holds the options every `csi-olm migrate` verb takes; the verbs are its
// subpackages.
package migrate

import (
	"io"
	"time"

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
