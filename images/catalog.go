package images

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
	// binary is opm alone, which the csi-olm image carries beside csi-olm.
	binary []byte
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
	return &OPM{layer: layer, platform: platform, binary: opm}, nil
}

// Platform is the platform opm is built for.
func (o *OPM) Platform() v1.Platform { return o.platform }

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

// OPMImage is OLM's opm image: opm alone, which OLM's bundle-unpack Jobs run as
// `opm alpha bundle extract` to write a bundle image's manifests into a ConfigMap.
func OPMImage(opm *OPM) (v1.Image, error) {
	return Image(nil, Config{Entrypoint: []string{OPMBinary}, User: NonRootUser, Platform: opm.platform}, opm.layer)
}

// UtilImage is OLM's util image as its bundle-unpack Jobs use it: the Job's first container
// copies /bin/cpb out of it with /bin/cp, and runs that cpb inside the bundle image, which has
// nothing else, to copy the bundle's manifests out.
func UtilImage(cp, cpb []byte) (v1.Image, error) {
	platform, err := StaticPlatform("cp", cp)
	if err != nil {
		return nil, fmt.Errorf("util image: %w", err)
	}
	cpbPlatform, err := StaticPlatform("cpb", cpb)
	if err != nil {
		return nil, fmt.Errorf("util image: %w", err)
	}
	if !cpbPlatform.Equals(platform) {
		return nil, fmt.Errorf("util image: cp is built for %s but cpb for %s", platform, cpbPlatform)
	}
	layer, err := Layer([]File{{Path: "/bin/cp", Mode: 0o755, Data: cp}, {Path: "/bin/cpb", Mode: 0o755, Data: cpb}})
	if err != nil {
		return nil, fmt.Errorf("util image: %w", err)
	}
	return Image(nil, Config{User: NonRootUser, Platform: platform}, layer)
}
