package images

import (
	"fmt"
	"io/fs"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// OperatorBinary is where the operator binary lives in its image.
	OperatorBinary = "/usr/bin/aws-efs-csi-driver-operator"
	// NonRootUser runs the operator. It is numeric so that the kubelet can enforce runAsNonRoot,
	// and OpenShift's restricted-v2 SCC replaces it with a UID of the namespace's range anyway.
	NonRootUser = "65532"
	// SourceURL is where the image's source lives.
	SourceURL = "https://github.com/csi-olm/csi-olm"
	// TmpDir is world-writable in the operator image: library-go's controllercmd writes the
	// metrics server's self-signed serving certificate there at start, as whatever user the
	// pod runs as, and exits when it cannot.
	TmpDir = "/tmp"
)

// OperatorConfig is the config of the operator image of a version and source revision. The
// Containerfile next to the operator's main declares the same; a test holds the two together.
func OperatorConfig(version, revision string, platform v1.Platform) Config {
	const description = "Installs the AWS EFS CSI driver on OpenShift, adopts a running one, and serves SharedVolumes"
	return Config{
		Entrypoint: []string{OperatorBinary},
		User:       NonRootUser,
		Platform:   platform,
		Labels: map[string]string{
			"org.opencontainers.image.title":       "aws-efs-csi-driver-operator",
			"org.opencontainers.image.description": description,
			"org.opencontainers.image.source":      SourceURL,
			"org.opencontainers.image.licenses":    "Apache-2.0",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.revision":    revision,
			"name":                                 "csi-olm/aws-efs-csi-driver-operator",
			"summary":                              "AWS EFS CSI Driver Operator",
			"description":                          description,
			"io.k8s.display-name":                  "AWS EFS CSI Driver Operator",
		},
	}
}

// Operator builds the operator image: the statically linked binary as one layer on base (an
// empty image when nil).
func Operator(binary []byte, base v1.Image, version, revision string) (v1.Image, error) {
	platform, err := StaticPlatform("the operator binary", binary)
	if err != nil {
		return nil, err
	}
	layer, err := Layer([]File{
		{Path: OperatorBinary, Mode: 0o755, Data: binary},
		{Path: TmpDir, Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	})
	if err != nil {
		return nil, fmt.Errorf("operator image: %w", err)
	}
	img, err := Image(base, OperatorConfig(version, revision, platform), layer)
	if err != nil {
		return nil, fmt.Errorf("operator image: %w", err)
	}
	return img, nil
}

// OperatorIndex builds the operator image for each binary, one per platform, into an image
// index, which is what a multi-architecture cluster pulls.
func OperatorIndex(binaries [][]byte, base v1.Image, version, revision string) (v1.ImageIndex, error) {
	if len(binaries) == 0 {
		return nil, fmt.Errorf("operator image: no binary given")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var seen []v1.Platform
	for _, binary := range binaries {
		img, err := Operator(binary, base, version, revision)
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("operator image: %w", err)
		}
		platform := *cfg.Platform()
		if slices.ContainsFunc(seen, platform.Equals) {
			return nil, fmt.Errorf("operator image: two binaries are built for %s", platform)
		}
		seen = append(seen, platform)
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	return idx, nil
}
