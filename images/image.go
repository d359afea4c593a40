package images

import (
	"fmt"
	"maps"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Config is what an image runs and how it is labelled.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	// User is numeric, so that a kubelet can check runAsNonRoot without reading /etc/passwd.
	User       string
	WorkingDir string
	Labels     map[string]string
	Platform   v1.Platform
}

// Image stacks layers on base (an empty OCI image when nil) and sets cfg. The base's own
// entrypoint, user and labels are replaced, not merged, so an image says only what cfg says.
func Image(base v1.Image, cfg Config, layers ...v1.Layer) (v1.Image, error) {
	if base == nil {
		base = mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	adds := make([]mutate.Addendum, 0, len(layers))
	for _, l := range layers {
		adds = append(adds, mutate.Addendum{Layer: l, History: v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: "csi-olm"}})
	}
	img, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	file, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read the base config: %w", err)
	}
	file = file.DeepCopy()
	file.Architecture, file.OS, file.Variant = cfg.Platform.Architecture, cfg.Platform.OS, cfg.Platform.Variant
	file.Created = v1.Time{Time: Epoch}
	file.Author = ""
	file.Config.Entrypoint = cfg.Entrypoint
	file.Config.Cmd = cfg.Cmd
	file.Config.Env = cfg.Env
	file.Config.User = cfg.User
	file.Config.WorkingDir = cfg.WorkingDir
	file.Config.Labels = maps.Clone(cfg.Labels)
	img, err = mutate.ConfigFile(img, file)
	if err != nil {
		return nil, fmt.Errorf("write the config: %w", err)
	}
	return img, nil
}
