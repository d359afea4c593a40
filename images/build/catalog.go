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
	// HealthProbeBinary is where grpc_health_probe lives, as in the upstream opm base image: OLM's
	// registry pod runs `grpc_health_probe -addr=:50051` as its startup, readiness and liveness
	// probe, from the image's PATH.
	HealthProbeBinary = "/bin/grpc_health_probe"
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

// OPM is what serves a catalog, packed once into the layer every catalog image of a run shares
// (compressing it is most of the cost of a catalog image): opm, grpc_health_probe, and a
// world-writable /tmp, where `opm serve` builds its cache at start as whatever user the
// registry pod runs as.
type OPM struct {
	layer    v1.Layer
	platform v1.Platform
}

// NewOPM checks that opm and grpc_health_probe are statically linked for one platform, which
// they must be on an empty base, and packs them.
func NewOPM(opm, healthProbe []byte) (*OPM, error) {
	platform, err := StaticPlatform("opm", opm)
	if err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	probePlatform, err := StaticPlatform("grpc_health_probe", healthProbe)
	if err != nil {
		return nil, fmt.Errorf("catalog image: %w", err)
	}
	if !probePlatform.Equals(platform) {
		return nil, fmt.Errorf("catalog image: opm is built for %s but grpc_health_probe for %s", platform, probePlatform)
	}
	layer, err := Layer([]File{
		{Path: OPMBinary, Mode: 0o755, Data: opm},
		{Path: HealthProbeBinary, Mode: 0o755, Data: healthProbe},
		{Path: TmpDir, Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	})
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
