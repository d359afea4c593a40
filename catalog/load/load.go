// Package load is how every catalog verb reads a file-based catalog, as opm render reads one: a
// directory as it is, a catalog image pulled and unpacked, or the catalog a running registry
// serves (a CatalogSource's, read over the gRPC API OLM reads). It also serves a catalog
// in-process, as `opm serve` does, for OLM's resolver.
package load

import (
	"archive/tar"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/pkg/containertools"

	"github.com/csi-olm/csi-olm/catalog/tree"
)

// Catalog is a catalog read from a directory or from a catalog image.
type Catalog struct {
	// Name names it in reports (tree.NameOf).
	Name string
	// Arg is the directory or image reference the catalog was read from, for messages.
	Arg string
	// FS holds the catalog's files.
	FS fs.FS
	// Close removes what reading an image unpacked.
	Close func()
}

// Registry says how catalog images are pulled, as opm's flags of the same names do. Credentials
// come from the Docker and Podman login files (~/.docker/config.json, $REGISTRY_AUTH_FILE,
// $XDG_RUNTIME_DIR/containers/auth.json), as for opm.
type Registry struct {
	// UseHTTP pulls over plain HTTP (--use-http).
	UseHTTP bool
	// SkipTLSVerify accepts any certificate (--skip-tls-verify).
	SkipTLSVerify bool
	// CAFile is a PEM file of certificate authorities trusted beside the system's (--ca-file).
	CAFile string
	// Progress, when set, hears of each pull.
	Progress io.Writer
}

type registryKey struct{}

// WithRegistry is ctx whose catalog images Open pulls as r says.
func WithRegistry(ctx context.Context, r Registry) context.Context {
	return context.WithValue(ctx, registryKey{}, r)
}

// options are the pull options r asks for.
func (r Registry) options() ([]name.Option, []remote.Option, error) {
	var names []name.Option
	if r.UseHTTP {
		names = append(names, name.Insecure)
	}
	if !r.SkipTLSVerify && r.CAFile == "" {
		return names, nil, nil
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: r.SkipTLSVerify} //nolint:gosec // asked for with --skip-tls-verify
	if r.CAFile != "" {
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the registry's certificate authorities: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("reading the registry's certificate authorities: %s holds no PEM certificate", r.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	transport := remote.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	return names, []remote.Option{remote.WithTransport(transport)}, nil
}

// Open reads a catalog as opm render does: an existing directory as it is, else a catalog image,
// pulled and unpacked from the directory its configs label names, with ctx's Registry options
// (WithRegistry). The catalog is named by tree.NameOf.
func Open(ctx context.Context, arg string, opts ...remote.Option) (*Catalog, error) {
	if st, err := os.Stat(arg); err == nil {
		if !st.IsDir() {
			return nil, fmt.Errorf("catalog %s: not a directory", arg)
		}
		if t, err := tree.Open(arg); err == nil {
			names := make([]string, len(t.Minors))
			for i, m := range t.Minors {
				names[i] = m.Index()
			}
			return nil, fmt.Errorf("catalog %s is a tree of per-minor catalogs (%s): give the catalog of one minor, such as %s",
				arg, strings.Join(names, ", "), t.Path(t.Minors[len(t.Minors)-1]))
		}
		return &Catalog{Name: tree.NameOf(arg), Arg: arg, FS: os.DirFS(arg), Close: func() {}}, nil
	}
	// Only a reference that names its registry is pulled: a mistyped directory must not become a
	// pull from Docker Hub, nor a relative one (../catalog) a lookup of the host "..".
	reg, _ := ctx.Value(registryKey{}).(Registry)
	nameOpts, pullOpts, err := reg.options()
	if err != nil {
		return nil, err
	}
	host, _, _ := strings.Cut(arg, "/")
	ref, err := name.ParseReference(arg, nameOpts...)
	if err != nil || !strings.Contains(arg, "/") || strings.HasPrefix(host, ".") || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return nil, fmt.Errorf("catalog %s: no such directory, and not an image reference with a registry host (registry.example/catalog:tag)", arg)
	}
	opts = append(append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, pullOpts...), opts...)
	if reg.Progress != nil {
		fmt.Fprintf(reg.Progress, "pulling catalog image %s\n", arg)
	}
	img, err := remote.Image(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: no such directory, and pulling it as an image failed: %w", arg, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("catalog image %s: %w", arg, err)
	}
	configs := cfg.Config.Labels[containertools.ConfigsLocationLabel]
	if configs == "" {
		return nil, fmt.Errorf("catalog image %s has no %s label: it is not a file-based catalog image", arg, containertools.ConfigsLocationLabel)
	}
	dir, err := os.MkdirTemp("", "csi-olm-catalog-")
	if err != nil {
		return nil, err
	}
	flat := mutate.Extract(img)
	defer flat.Close()
	n, err := unpack(tar.NewReader(flat), strings.Trim(path.Clean(configs), "/"), dir)
	if err == nil && n == 0 {
		err = fmt.Errorf("it has no files under %s", configs)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("catalog image %s: %w", arg, err)
	}
	return &Catalog{Name: tree.NameOf(arg), Arg: arg, FS: os.DirFS(dir), Close: func() { os.RemoveAll(dir) }}, nil
}

// unpack writes the regular files under prefix of a flattened image into dir. Links and other
// special files are left out: a catalog is plain files, and a link could point out of dir.
func unpack(tr *tar.Reader, prefix, dir string) (int, error) {
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("reading its layers: %w", err)
		}
		p := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		rel, ok := strings.CutPrefix(p, prefix+"/")
		if !ok || h.Typeflag != tar.TypeReg || !fs.ValidPath(rel) {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return n, err
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return n, err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return n, fmt.Errorf("unpacking %s: %w", h.Name, err)
		}
		n++
	}
}
