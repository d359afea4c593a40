package images

import (
	"bytes"
	"debug/macho"
	"fmt"
	"io/fs"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/csi-olm/csi-olm/docs/ci"
)

const (
	// CLIBinary is where csi-olm lives in its image; opm sits beside it at OPMBinary.
	CLIBinary = "/usr/bin/csi-olm"
	// CLIWorkDir is where a pipeline mounts its catalogs: the image's working directory.
	CLIWorkDir = "/work"
	// CLIShell is the image's POSIX shell: a link to csi-olm, which runs as a shell under that
	// name (internal/shell), for CI steps that run a script in the image.
	CLIShell = "/bin/sh"
	// CLICheckCatalogs is the CI recipe's script (docs/ci), run by the image's shell.
	CLICheckCatalogs = "/usr/share/csi-olm/check-catalogs.sh"
	// CLIPath finds csi-olm and opm, for a script in the image and for a runtime that sets no
	// PATH of its own.
	CLIPath = "PATH=/usr/bin:/bin"
)

// CLIConfig is the config of the csi-olm image of a version and source revision.
func CLIConfig(version, revision string, platform v1.Platform) Config {
	const description = "Validates, compares and simulates OLM bundles and file-based catalogs, and migrates OpenShift's optional CSI drivers between installers"
	return Config{
		Entrypoint: []string{CLIBinary},
		Env:        []string{CLIPath},
		User:       NonRootUser,
		WorkingDir: CLIWorkDir,
		Platform:   platform,
		Labels: map[string]string{
			"org.opencontainers.image.title":       "csi-olm",
			"org.opencontainers.image.description": description,
			"org.opencontainers.image.source":      SourceURL,
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    revision,
		},
	}
}

// CLI builds the csi-olm image: csi-olm and the pinned opm, both statically linked for one
// platform, on an empty base, with csi-olm as /bin/sh too, the CI recipe's script, and a
// world-writable /tmp for the catalog images it unpacks. It needs no CA bundle: csi-olm carries
// the public roots (golang.org/x/crypto/x509roots/fallback).
func CLI(binary []byte, opm *OPM, version, revision string) (v1.Image, error) {
	platform, err := StaticPlatform("csi-olm", binary)
	if err != nil {
		return nil, fmt.Errorf("csi-olm image: %w", err)
	}
	if !opm.platform.Equals(platform) {
		return nil, fmt.Errorf("csi-olm image: csi-olm is built for %s but opm for %s", platform, opm.platform)
	}
	layer, err := Layer([]File{
		{Path: CLIBinary, Mode: 0o755, Data: binary},
		{Path: OPMBinary, Mode: 0o755, Data: opm.binary},
		{Path: CLIShell, Link: CLIBinary},
		{Path: CLICheckCatalogs, Mode: 0o755, Data: ci.CheckCatalogs},
		{Path: TmpDir, Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: CLIWorkDir, Mode: fs.ModeDir | 0o755},
	})
	if err != nil {
		return nil, fmt.Errorf("csi-olm image: %w", err)
	}
	return Image(nil, CLIConfig(version, revision, platform), layer)
}

// machoArchitectures maps Mach-O CPU types to Go's architecture names.
var machoArchitectures = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}

// ExecutablePlatform is the platform a Linux (ELF, statically linked) or macOS (Mach-O)
// executable was built for. what names the binary in errors.
func ExecutablePlatform(what string, binary []byte) (v1.Platform, error) {
	if f, err := macho.NewFile(bytes.NewReader(binary)); err == nil {
		defer f.Close()
		arch, ok := machoArchitectures[f.Cpu]
		if !ok {
			return v1.Platform{}, fmt.Errorf("%s is a macOS executable for %s, which csi-olm is not released for", what, f.Cpu)
		}
		return v1.Platform{OS: "darwin", Architecture: arch}, nil
	}
	return StaticPlatform(what, binary)
}
