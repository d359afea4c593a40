// Command testledger keeps the record of a test run's times: `tee` copies a `go test -json`
// stream into a file while printing what plain `go test` prints, and `slowest` lists the slowest
// tests of the files written. `make test`, `make e2e` and .ci/run use it, so every CI log says
// which tests its minutes went to.
//
//	go test -json ./... | testledger tee bin/test-json/unit.jsonl
//	testledger slowest -n 15 bin/test-json/*.jsonl
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newCommand().Execute(); err != nil {
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
	return root
}
