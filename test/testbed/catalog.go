package testbed

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// CatalogPackage is one package of a catalog the tests assemble from bundle directories.
type CatalogPackage struct {
	Name           string
	DefaultChannel string
	Channel        string
	// Entries are the channel's upgrade edges, by CSV name.
	Entries []declcfg.ChannelEntry
	// BundleDirs are rendered with opm into olm.bundle objects with their manifests embedded
	// and no image, which OLM installs without a registry (DESIGN.md §5).
	BundleDirs []string
}

// WriteCatalog renders the bundles with the real opm and writes a file-based catalog to dir,
// after checking it the way `opm validate` does.
func WriteCatalog(ctx context.Context, opm, dir string, packages ...CatalogPackage) error {
	var cfg declcfg.DeclarativeConfig
	for _, p := range packages {
		cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: p.Name, DefaultChannel: p.DefaultChannel})
		cfg.Channels = append(cfg.Channels, declcfg.Channel{Schema: declcfg.SchemaChannel, Package: p.Name, Name: p.Channel, Entries: p.Entries})
		for _, bundleDir := range p.BundleDirs {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, opm, "render", bundleDir, "-o", "json")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("opm render %s: %w\n%s", bundleDir, err, stderr.String())
			}
			rendered, err := declcfg.LoadReader(&stdout)
			if err != nil {
				return fmt.Errorf("loading the rendering of %s: %w", bundleDir, err)
			}
			cfg.Bundles = append(cfg.Bundles, rendered.Bundles...)
		}
	}
	if _, err := declcfg.ConvertToModel(cfg); err != nil {
		return fmt.Errorf("catalog is invalid: %w", err)
	}
	return declcfg.WriteFS(cfg, dir, declcfg.WriteJSON, ".json")
}
