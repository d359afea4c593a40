// Command csistandin plays the EFS CSI driver, node-driver-registrar or livenessprobe on the test
// bed's real node, by the name it is run as (test/csistandin).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/csi-olm/csi-olm/test/csistandin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := csistandin.Main(ctx, filepath.Base(os.Args[0]), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
