package testutil

import (
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/csi-olm/csi-olm/images"
)

// PushCatalogImage pushes a catalog image of dir, laid out as `csi-olm release` builds them with
// cfg, to an in-memory registry on loopback that lives as long as the test, and returns its
// reference, tagged tag.
func PushCatalogImage(t *testing.T, dir string, cfg images.Config, tag string) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return pushCatalogImage(t, srv, dir, cfg, tag)
}

// PushCatalogImageTLS is PushCatalogImage to a registry serving HTTPS with a certificate of its
// own authority, whose PEM file it also returns.
func PushCatalogImageTLS(t *testing.T, dir string, cfg images.Config, tag string) (ref, caFile string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	// The refused handshakes the tests cause are theirs to report.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return pushCatalogImage(t, srv, dir, cfg, tag, remote.WithTransport(srv.Client().Transport)), caFile
}

func pushCatalogImage(t *testing.T, srv *httptest.Server, dir string, cfg images.Config, tag string, opts ...remote.Option) string {
	t.Helper()
	files, err := images.CopyFS(os.DirFS(dir), ".", images.ConfigsDir, false)
	if err != nil {
		t.Fatal(err)
	}
	layer, err := images.Layer(files)
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Image(nil, cfg, layer)
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(strings.TrimPrefix(srv.URL, "http://"), "https://") + "/csi-olm/certified:" + tag
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, opts...); err != nil {
		t.Fatal(err)
	}
	return ref
}
