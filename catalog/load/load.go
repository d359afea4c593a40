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
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/pkg/containertools"
	"github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"

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
	// RegistriesConf is containers' registries.conf whose mirrors pulls try first; empty is the
	// file podman reads ($CONTAINERS_REGISTRIES_CONF, else /etc/containers/registries.conf and
	// registries.conf.d), and none at all when there is none.
	RegistriesConf string
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
	img, err := pull(ctx, arg, "catalog", opts...)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: no such directory, and %w", arg, err)
	}
	configs, err := labelled(img, "catalog image "+arg, containertools.ConfigsLocationLabel, "a file-based catalog image")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "csi-olm-catalog-")
	if err != nil {
		return nil, err
	}
	n, err := unpack(img, configs, func(rel string, r io.Reader) error {
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err == nil && n == 0 {
		err = fmt.Errorf("it has no files under %s", configs)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("catalog image %s: %w", arg, err)
	}
	return &Catalog{Name: tree.NameOf(arg), Arg: arg, FS: os.DirFS(dir), Close: func() { os.RemoveAll(dir) }}, nil
}

// BundleManifests reads a bundle image as OLM's bundle-unpack Job does: the files of the
// directory its manifests label names, by name, pulled with ctx's Registry options
// (WithRegistry).
func BundleManifests(ctx context.Context, ref string) (map[string][]byte, error) {
	img, err := pull(ctx, ref, "bundle")
	if err != nil {
		return nil, fmt.Errorf("bundle image %s: %w", ref, err)
	}
	manifests, err := labelled(img, "bundle image "+ref, bundle.ManifestsLabel, "a bundle image")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	n, err := unpack(img, manifests, func(rel string, r io.Reader) error {
		raw, err := io.ReadAll(r)
		files[rel] = raw
		return err
	})
	if err == nil && n == 0 {
		err = fmt.Errorf("it has no files under %s", manifests)
	}
	if err != nil {
		return nil, fmt.Errorf("bundle image %s: %w", ref, err)
	}
	return files, nil
}

// BundleDir unpacks a bundle image into dir as a bundle directory: the files of the directories
// its manifests and metadata labels name, under manifests/ and metadata/, as operator-controller
// reads a bundle. It pulls with ctx's Registry options (WithRegistry).
func BundleDir(ctx context.Context, ref, dir string) error {
	img, err := pull(ctx, ref, "bundle")
	if err != nil {
		return fmt.Errorf("bundle image %s: %w", ref, err)
	}
	for _, part := range []struct{ label, into string }{{bundle.ManifestsLabel, "manifests"}, {bundle.MetadataLabel, "metadata"}} {
		from, err := labelled(img, "bundle image "+ref, part.label, "a bundle image")
		if err != nil {
			return err
		}
		n, err := unpack(img, from, func(rel string, r io.Reader) error {
			target := filepath.Join(dir, part.into, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			raw, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			return os.WriteFile(target, raw, 0o644)
		})
		if err == nil && n == 0 {
			err = fmt.Errorf("it has no files under %s", from)
		}
		if err != nil {
			return fmt.Errorf("bundle image %s: %w", ref, err)
		}
	}
	return nil
}

// pull fetches the image ref names, a catalog or a bundle (kind), with ctx's Registry options,
// from the first of its pull sources that serves it. Only a reference that names its registry is
// pulled: a mistyped directory must not become a pull from Docker Hub, nor a relative one
// (../catalog) a lookup of the host "..".
func pull(ctx context.Context, ref, kind string, opts ...remote.Option) (v1.Image, error) {
	reg, _ := ctx.Value(registryKey{}).(Registry)
	nameOpts, pullOpts, err := reg.options()
	if err != nil {
		return nil, err
	}
	host, _, _ := strings.Cut(ref, "/")
	if _, err := name.ParseReference(ref, nameOpts...); err != nil || !strings.Contains(ref, "/") || strings.HasPrefix(host, ".") || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return nil, fmt.Errorf("not an image reference with a registry host (registry.example/%s:tag)", kind)
	}
	sources, err := reg.sources(ref)
	if err != nil {
		return nil, err
	}
	opts = append(append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, pullOpts...), opts...)
	var failed []string
	for _, src := range sources {
		parsed, err := name.ParseReference(src.ref, append(slices.Clone(nameOpts), src.nameOpts...)...)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", src.ref, err))
			continue
		}
		if reg.Progress != nil {
			fmt.Fprintf(reg.Progress, "pulling %s image %s\n", kind, src.ref)
		}
		img, err := remote.Image(parsed, opts...)
		if err == nil {
			return img, nil
		}
		if len(sources) == 1 {
			return nil, fmt.Errorf("pulling it as an image failed: %w", err)
		}
		failed = append(failed, fmt.Sprintf("%s: %v", src.ref, err))
	}
	return nil, fmt.Errorf("pulling it as an image failed from each of its sources (%s): %s", reg.confName(), strings.Join(failed, "; "))
}

// source is one place an image is pulled from.
type source struct {
	ref      string
	nameOpts []name.Option
}

// sources are where ref is pulled from, in order, as podman, skopeo and opm pull it: the mirrors
// that containers' registries.conf gives ref's repository, then where it sends the repository
// itself (ref, unless the file relocates it). A disconnected cluster's admin keeps there the
// mirrors the cluster's ImageDigestMirrorSets name.
func (r Registry) sources(ref string) ([]source, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	conf, err := sysregistriesv2.FindRegistry(&types.SystemContext{SystemRegistriesConfPath: r.RegistriesConf}, named.String())
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.confName(), err)
	}
	if conf == nil {
		return []source{{ref: ref}}, nil
	}
	if conf.Blocked {
		return nil, fmt.Errorf("%s blocks the registry of %s", r.confName(), ref)
	}
	pulls, err := conf.PullSourcesFromReference(named)
	if err != nil {
		return nil, fmt.Errorf("image %s: the sources %s gives it: %w", ref, r.confName(), err)
	}
	sources := make([]source, 0, len(pulls))
	for _, p := range pulls {
		src := source{ref: p.Reference.String()}
		if p.Endpoint.Insecure {
			src.nameOpts = []name.Option{name.Insecure}
		}
		sources = append(sources, src)
	}
	return sources, nil
}

// confName names the registries.conf that mirrors are read from, for messages.
func (r Registry) confName() string {
	if r.RegistriesConf != "" {
		return r.RegistriesConf
	}
	return "registries.conf ($CONTAINERS_REGISTRIES_CONF, /etc/containers/registries.conf)"
}

// labelled is the directory an image's label names, without its slashes. An image without the
// label is refused as not being kind; errors name the image as name.
func labelled(img v1.Image, name, label, kind string) (string, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	dir := cfg.Config.Labels[label]
	if dir == "" {
		return "", fmt.Errorf("%s has no %s label: it is not %s", name, label, kind)
	}
	return strings.Trim(path.Clean(dir), "/"), nil
}

// unpack hands each regular file under dir of an image's flattened layers to file, by its path
// under dir. Links and other special files are left out: a catalog or a bundle is plain files, and
// a link could point out of dir.
func unpack(img v1.Image, dir string, file func(rel string, r io.Reader) error) (int, error) {
	flat := mutate.Extract(img)
	defer flat.Close()
	tr := tar.NewReader(flat)
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
		rel, ok := strings.CutPrefix(p, dir+"/")
		if !ok || h.Typeflag != tar.TypeReg || !fs.ValidPath(rel) {
			continue
		}
		if err := file(rel, tr); err != nil {
			return n, fmt.Errorf("unpacking %s: %w", h.Name, err)
		}
		n++
	}
}
