// Command csi-olm is the release and migration toolchain of the csi-olm operators. Each verb
// group lives in its own package here; the verbs call actions of the domain packages.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	// The public roots, for a machine or image without a CA bundle (the csi-olm image has none):
	// Go uses them only when the system offers no roots of its own.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/bundle"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/catalog"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/dev"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/efs"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/images"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/internal/flags"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/migrate"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/release"
	"github.com/csi-olm/csi-olm/cmd/csi-olm/version"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/shell"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Run as sh (the csi-olm image's /bin/sh links here), csi-olm is the image's shell.
	if filepath.Base(os.Args[0]) == shell.Name {
		status := shell.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(status)
	}
	err := newRoot().ExecuteContext(ctx)
	stop()
	os.Exit(exitcode.Of(err))
}

func newRoot() *cobra.Command {
	// operator-registry's bundle parser logs every optional file it does not find.
	logrus.SetLevel(logrus.WarnLevel)
	root := &cobra.Command{
		Use:   "csi-olm",
		Short: "Build, check and migrate the OLM packages of OpenShift's optional CSI drivers",
		Long: `csi-olm generates and validates the OLM bundles and file-based catalogs of the AWS EFS,
AWS EBS and OpenStack Manila CSI driver operators, and migrates clusters between them.

Every verb exits 0 when it succeeds and finds nothing, 1 when it ran and found its input wrong (an
invalid bundle or catalog, a breaking change, an unresolvable start, SharedVolumes that fail the
check), and 2 when it could not do its job (a bad flag, an unreadable input, a registry or cluster
out of reach).`,
		SilenceUsage: true,
	}
	flags.BindQuiet(root)
	root.AddCommand(version.NewCommand(), bundle.NewCommand(), catalog.NewCommand(), efs.NewCommand(),
		migrate.NewCommand(), images.NewCommand(), release.NewCommand(), dev.NewCommand())
	return root
}
