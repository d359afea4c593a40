// Package csistandin stands in for the programs of the EFS driver's pods that cannot be built
// here: the Go module proxy refuses the upstream aws-efs-csi-driver, node-driver-registrar and
// livenessprobe modules at every version. One binary plays each of them by the name it is run
// as (the path its image's entrypoint gives), with the upstream program's flags, socket
// protocol and HTTP endpoints, so that the real node runs efs-csi-node and efs-csi-controller
// exactly as the operator deploys them: the same image references, arguments, environment,
// socket paths and host paths, registered with the real kubelet.
package csistandin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/klog/v2"
)

// The names each program is run as: the basenames of its image's entrypoint.
const (
	DriverName    = "aws-efs-csi-driver"
	RegistrarName = "csi-node-driver-registrar"
	ProbeName     = "livenessprobe"
)

// Entrypoints are the paths of the entrypoints of the images the operator runs, by program: the
// driver's image, and OpenShift's sidecar images, which install their programs in /usr/bin.
var Entrypoints = map[string]string{
	DriverName:    "/bin/aws-efs-csi-driver",
	RegistrarName: "/usr/bin/csi-node-driver-registrar",
	ProbeName:     "/usr/bin/livenessprobe",
}

// program is one stand-in: its flags, registered on a flag set, and what it runs.
type program interface {
	flags(fs *flag.FlagSet)
	run(ctx context.Context, logger *log.Logger) error
}

// Main runs the program called name with args until ctx ends or it fails. A flag the upstream
// program does not have is an error, as it is for the upstream program: the stand-ins exist to
// prove the pods' arguments.
func Main(ctx context.Context, name string, args []string, stderr io.Writer) error {
	var p program
	switch name {
	case DriverName:
		p = &Driver{}
	case RegistrarName:
		p = &Registrar{}
	case ProbeName:
		p = &Probe{}
	default:
		names := make([]string, 0, len(Entrypoints))
		for n := range Entrypoints {
			names = append(names, n)
		}
		slices.Sort(names)
		return fmt.Errorf("csistandin: run as %q; it plays only %s", name, strings.Join(names, ", "))
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	// Every upstream program registers klog's flags (-v, --logtostderr, ...).
	klog.InitFlags(fs)
	p.flags(fs)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", name, fs.Args())
	}
	logger := log.New(stderr, name+" (csi-olm stand-in): ", log.LstdFlags|log.Lmsgprefix)
	logger.Printf("started with %q", args)
	if err := p.run(ctx, logger); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// socketPath turns a CSI endpoint into the path of its unix socket. The driver takes a URL
// (unix:/csi/csi.sock, unix:///var/lib/csi/sockets/pluginproxy/csi.sock) and the sidecars
// take a path or a URL.
func socketPath(endpoint string) (string, error) {
	if !strings.Contains(endpoint, ":") {
		if endpoint == "" {
			return "", fmt.Errorf("no CSI endpoint given")
		}
		return endpoint, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("CSI endpoint %q: %w", endpoint, err)
	}
	if u.Scheme != "unix" {
		return "", fmt.Errorf("CSI endpoint %q: only unix sockets are served, not %s", endpoint, u.Scheme)
	}
	path := u.Host + u.Path
	if path == "" {
		return "", fmt.Errorf("CSI endpoint %q names no socket", endpoint)
	}
	return path, nil
}

// listenUnix listens on the unix socket at path, replacing a socket left by an earlier run of
// the container (the directory is a host path that outlives it).
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing the old socket: %w", err)
	}
	return net.Listen("unix", path)
}
