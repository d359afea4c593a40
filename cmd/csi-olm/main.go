// Command csi-olm is the release and migration toolchain of the csi-olm operators.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/csi-olm/csi-olm/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.NewRoot().ExecuteContext(ctx)
	stop()
	if err != nil {
		os.Exit(1)
	}
}
