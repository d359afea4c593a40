package build

import (
	"fmt"
	"io/fs"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	// ConfigsDir holds the file-based catalog in a catalog image.
	ConfigsDir = "/configs"
	// OPMBinary is where opm lives in a catalog image, as in the upstream opm base image.
	OPMBinary = "/bin/opm"
	// ConfigsLabel tells OLM and opm where the catalog is in the image.
	ConfigsLabel = "operators.operatorframework.io.index.configs.v1"
)

// CatalogConfig is the config of a catalog image: OLM runs it as a registry pod that serves the
// catalog over gRPC.
func CatalogConfig(platform v1.Platform) Config {
	return Config{
		Entrypoint: []string{OPMBinary},
		Cmd:        []string{"serve", ConfigsDir},
		Labels:     map[string]string{ConfigsLabel: ConfigsDir},
		Platform:   platform,
		// opm serve needs no privilege; the registry pod runs it under restricted-v2.
		User: NonRootUser,
	}
}

// OPM is opm packed once into the layer every catalog image of a run shares: compressing it is
// most of the cost of a catalog image.
type OPM struct {
	layer    v1.Layer
	platform v1.Platform
}

// NewOPM checks that opm is statically linked, which it must be on an empty base, and packs it.
func NewOPM(binary []byte) (*OPM, error) {
	platform, err := StaticPlatform("opm", binary)
	if err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	layer, err := Layer([]File{{Path: OPMBinary, Mode: 0o755, Data: binary}})
	if err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	return &OPM{layer: layer, platform: platform}, nil
}

// Catalog builds a catalog image: the file-based catalog under /configs and opm, each in its own
// layer so that catalogs built with the same opm share its layer in the registry too.
func Catalog(fbc fs.FS, opm *OPM) (v1.Image, error) {
	files, err := CopyFS(fbc, ".", ConfigsDir, false)
	if err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("catalog image: the catalog has no files")
	}
	configs, err := Layer(files)
	if err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	return Image(nil, CatalogConfig(opm.platform), opm.layer, configs)
}
