package simulate

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"

	"github.com/operator-framework/operator-registry/pkg/api"
	registrycache "github.com/operator-framework/operator-registry/pkg/cache"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	"github.com/operator-framework/operator-registry/pkg/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// served is a catalog behind operator-registry's gRPC registry API, held in this process.
type served struct {
	client *registryclient.Client
	close  func()
}

// serve runs, in-process, the code `opm serve` runs for a file-based catalog: operator-registry's
// cache built from the catalog and its RegistryServer. OLM's resolver then reads the catalog
// through the same gRPC API, and the same conversion to api.Bundle (replaces, skips, skipRange,
// deprecations), as it does from a catalog pod in a cluster. The listener is in memory: nothing
// listens on the machine.
func serve(ctx context.Context, fsys fs.FS) (*served, error) {
	cacheDir, err := os.MkdirTemp("", "csi-olm-simulate-")
	if err != nil {
		return nil, err
	}
	store, err := registrycache.New(cacheDir)
	if err != nil {
		os.RemoveAll(cacheDir)
		return nil, fmt.Errorf("opening the registry cache: %w", err)
	}
	cleanup := func() {
		store.Close()
		os.RemoveAll(cacheDir)
	}
	if err := registrycache.LoadOrRebuild(ctx, store, fsys); err != nil {
		cleanup()
		return nil, fmt.Errorf("building the registry cache: %w", err)
	}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	api.RegisterRegistryServer(srv, server.NewRegistryServer(store))
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///registry",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		cleanup()
		return nil, err
	}
	return &served{
		client: registryclient.NewClientFromConn(conn),
		close: func() {
			conn.Close()
			srv.Stop()
			cleanup()
		},
	}, nil
}
