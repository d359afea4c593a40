package clusterupgrade

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/option"
)

// Formats the verb prints.
var Formats = []string{"text", "json"}

// ClusterUpgrade is the verb: it follows every cluster upgrade of a tree of per-minor catalogs,
// and fails when one leaves an operator or the cluster stuck. With Since, only what is stuck in
// Tree and was not in Since fails, as `catalog diff --breaking` fails only on what a change
// breaks; what Since had stuck already is listed apart.
type ClusterUpgrade struct {
	Tree  string
	Since string
	// Output is text or json.
	Output string
	Out    io.Writer
}

// Run checks the tree and prints the report.
func (a *ClusterUpgrade) Run(ctx context.Context) error {
	if a.Output != "text" && a.Output != "json" {
		return option.Errorf("Output", "unknown output %q: use text or json", a.Output)
	}
	report, err := Check(ctx, a.Tree)
	if err != nil {
		return err
	}
	bad, already := report.Bad(), []StepFinding(nil)
	if a.Since != "" {
		earlier, err := Check(ctx, a.Since)
		if err != nil {
			return &option.Error{Field: "Since", Err: err}
		}
		bad, already = report.Regressions(earlier)
	}
	switch a.Output {
	case "json":
		enc := json.NewEncoder(a.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	default:
		if _, err := io.WriteString(a.Out, Text(report)); err != nil {
			return err
		}
		if a.Since != "" {
			fmt.Fprintf(a.Out, "since %s: %d install(s) newly stuck, %d stuck already\n", a.Since, len(bad), len(already))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if a.Since != "" {
		return exitcode.Found(fmt.Errorf("%s: %d install(s) newly stuck since %s (%s)", a.Tree, len(bad), a.Since, summary(bad)))
	}
	followed := 0
	for _, s := range report.Steps {
		followed += len(s.Findings)
	}
	return exitcode.Found(fmt.Errorf("%s: %d install(s) followed, %d stuck by a cluster upgrade (%s)", a.Tree, followed, len(bad), summary(bad)))
}
