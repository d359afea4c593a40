package load

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/pkg/api"
	registrycache "github.com/operator-framework/operator-registry/pkg/cache"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	"github.com/operator-framework/operator-registry/pkg/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// Served is a catalog behind operator-registry's gRPC registry API, held in this process.
type Served struct {
	Client *registryclient.Client
	Close  func()
}

// Serve runs, in-process, the code `opm serve` runs for a file-based catalog: operator-registry's
// cache built from the catalog and its RegistryServer. OLM's resolver then reads the catalog
// through the same gRPC API, and the same conversion to api.Bundle (replaces, skips, skipRange,
// deprecations), as it does from a catalog pod in a cluster. The listener is in memory: nothing
// listens on the machine. With packages not nil, the registry serves only those of cfg, the
// catalog fsys holds as loaded.
func Serve(ctx context.Context, fsys fs.FS, cfg *declcfg.DeclarativeConfig, packages map[string]bool) (*Served, error) {
	cacheDir, err := os.MkdirTemp("", "csi-olm-simulate-")
	if err != nil {
		return nil, err
	}
	cleanup := func() { os.RemoveAll(cacheDir) }
	if packages != nil {
		if fsys, err = writeSubset(filepath.Join(cacheDir, "catalog"), cfg, packages); err != nil {
			cleanup()
			return nil, err
		}
	}
	store, err := registrycache.New(filepath.Join(cacheDir, "cache"))
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("opening the registry cache: %w", err)
	}
	cleanup = func() {
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
	return &Served{
		Client: registryclient.NewClientFromConn(conn),
		Close: func() {
			conn.Close()
			srv.Stop()
			cleanup()
		},
	}, nil
}

// writeSubset writes the packages of cfg that packages names as a catalog in dir.
func writeSubset(dir string, cfg *declcfg.DeclarativeConfig, packages map[string]bool) (fs.FS, error) {
	sub := declcfg.DeclarativeConfig{
		Packages:     inScope(cfg.Packages, packages, func(p *declcfg.Package) string { return p.Name }),
		Channels:     inScope(cfg.Channels, packages, func(c *declcfg.Channel) string { return c.Package }),
		Bundles:      inScope(cfg.Bundles, packages, func(b *declcfg.Bundle) string { return b.Package }),
		Deprecations: inScope(cfg.Deprecations, packages, func(d *declcfg.Deprecation) string { return d.Package }),
		Others:       inScope(cfg.Others, packages, func(m *declcfg.Meta) string { return m.Package }),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "catalog.json"))
	if err != nil {
		return nil, err
	}
	if err := declcfg.WriteJSON(sub, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the served packages: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return os.DirFS(dir), nil
}

// inScope are the objects of the packages named.
func inScope[T any](objects []T, packages map[string]bool, packageOf func(*T) string) []T {
	var out []T
	for i := range objects {
		if packages[packageOf(&objects[i])] {
			out = append(out, objects[i])
		}
	}
	return out
}
