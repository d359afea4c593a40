// Command testledger keeps the record of a test run's times: `tee` copies a `go test -json`
// stream into a file while printing what plain `go test` prints, and `slowest` lists the slowest
// tests of the files written. `make test`, `make e2e` and .ci/run use it, so every CI log says
// which tests its minutes went to.
//
//	go test -json ./... | testledger tee bin/test-json/unit.jsonl
//	testledger slowest -n 15 bin/test-json/*.jsonl
//	testledger cpu -- make test   # the CPU time of every program the run started
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		// cpu's command failed: its exit code is the step's, as if it had run alone.
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() > 0 {
			os.Exit(exit.ExitCode())
		}
		os.Exit(1)
	}
}

func newCommand() *cobra.Command {
	root := &cobra.Command{Use: "testledger", SilenceUsage: true}
	root.AddCommand(&cobra.Command{
		Use:   "tee FILE",
		Short: "Append a go test -json stream from stdin to FILE and print it as go test without -json would",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a := &teeAction{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), File: args[0]}
			return a.Run()
		},
	})
	slowest := &slowestAction{}
	sc := &cobra.Command{
		Use:   "slowest FILE...",
		Short: "Print the slowest top-level tests recorded in the ledger files",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if slowest.N < 1 {
				return fmt.Errorf("-n takes a positive number, not %d", slowest.N)
			}
			slowest.Files, slowest.Out = args, cmd.OutOrStdout()
			return slowest.Run()
		},
	}
	sc.Flags().IntVarP(&slowest.N, "number", "n", 15, "how many tests to list")
	root.AddCommand(sc)

	cpu := &cpuAction{}
	var reportFile string
	cc := &cobra.Command{
		Use:   "cpu [-n N] -- COMMAND [ARG...]",
		Short: "Run a command and print the CPU time each program on the machine used while it ran",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cpu.N < 1 || cpu.Interval <= 0 {
				return fmt.Errorf("-n and --interval take positive values, not %d and %s", cpu.N, cpu.Interval)
			}
			cpu.Command, cpu.Stdin, cpu.Out, cpu.Err = args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			cpu.Report = cpu.Out
			if reportFile != "" {
				f, err := os.Create(reportFile)
				if err != nil {
					return fmt.Errorf("creating the report: %w", err)
				}
				defer f.Close()
				cpu.Report = f
			}
			return cpu.Run(cmd.Context())
		},
	}
	cc.Flags().IntVarP(&cpu.N, "number", "n", 25, "how many programs to list")
	cc.Flags().StringVar(&reportFile, "report", "", "write the report to this file instead of standard output")
	cc.Flags().DurationVar(&cpu.Interval, "interval", time.Second, "how often to read every process's CPU time")
	root.AddCommand(cc)
	return root
}
