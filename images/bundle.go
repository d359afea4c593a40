package images

import (
	"fmt"
	"io/fs"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/registryv1"
)

// bundlePlatform is what a bundle image declares. Its content is YAML that runs nowhere, but an
// OCI config must name a platform, and OLM's unpack jobs pull it on any node.
var bundlePlatform = v1.Platform{OS: "linux", Architecture: "amd64"}

// Bundle builds a bundle image from a bundle directory: manifests/ and metadata/ in one layer,
// labelled with exactly the annotations of metadata/annotations.yaml, which is how OLM reads a
// bundle's package and channels from an image.
func Bundle(bundle fs.FS) (v1.Image, error) {
	raw, err := fs.ReadFile(bundle, registryv1.AnnotationsFile)
	if err != nil {
		return nil, fmt.Errorf("bundle image: %w", err)
	}
	var file struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		return nil, fmt.Errorf("bundle image: %s: %w", registryv1.AnnotationsFile, err)
	}
	if len(file.Annotations) == 0 {
		return nil, fmt.Errorf("bundle image: %s has no annotations", registryv1.AnnotationsFile)
	}
	var files []File
	for _, dir := range []string{registryv1.ManifestsDir, registryv1.MetadataDir} {
		some, err := CopyFS(bundle, dir, "/"+dir, false)
		if err != nil {
			return nil, fmt.Errorf("bundle image: %w", err)
		}
		files = append(files, some...)
	}
	layer, err := Layer(files)
	if err != nil {
		return nil, fmt.Errorf("bundle image: %w", err)
	}
	return Image(nil, Config{Labels: file.Annotations, Platform: bundlePlatform}, layer)
}
