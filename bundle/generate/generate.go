// Package generate is the `csi-olm bundle generate` verb: it writes the OLM bundle of every
// release of every operator definition, and the drivers' external-storage test manifests.
package generate

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/lint"
	"github.com/csi-olm/csi-olm/bundle/registryv1"
	"github.com/csi-olm/csi-olm/bundle/testmanifest"
	"github.com/csi-olm/csi-olm/internal/fsutil"
)

// Generate writes bundles to OutputDir/<package>/<version>/.
type Generate struct {
	OutputDir string
	Operators []definition.Operator
	// Release validates the bundles as released bundles: every image pinned by digest.
	Release bool
	// TestManifests are the drivers' external-storage test manifests, by slash path relative to
	// OutputDir, written once the bundles are.
	TestManifests map[string]testmanifest.Manifest
	Out           io.Writer
}

// Run builds, validates and writes the bundles, then the test manifests.
func (g *Generate) Run(ctx context.Context) error {
	bundles, err := registryv1.All(g.Operators)
	if err != nil {
		return fmt.Errorf("invalid operator definitions, nothing was written:\n%w", err)
	}
	manifests := map[string][]byte{}
	for name, m := range g.TestManifests {
		if manifests[name], err = m.YAML(); err != nil {
			return fmt.Errorf("invalid test manifest %s, nothing was written: %w", name, err)
		}
	}
	if err := os.MkdirAll(g.OutputDir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	// Staging inside the output directory keeps the final renames on one file system.
	staging, err := os.MkdirTemp(g.OutputDir, ".staging-")
	if err != nil {
		return fmt.Errorf("creating staging directory: %w", err)
	}
	defer os.RemoveAll(staging)

	for _, b := range bundles {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeBundle(filepath.Join(staging, b.Dir()), b); err != nil {
			return err
		}
	}
	if err := g.validate(staging, bundles); err != nil {
		return err
	}
	var packages []string
	for _, b := range bundles {
		if !slices.Contains(packages, b.Package) {
			packages = append(packages, b.Package)
		}
	}
	for _, pkg := range packages {
		if err := fsutil.ReplaceDir(filepath.Join(staging, pkg), filepath.Join(g.OutputDir, pkg), staging+".old-"+pkg); err != nil {
			return err
		}
	}
	for _, b := range bundles {
		fmt.Fprintf(g.Out, "wrote %s (%s)\n", filepath.Join(g.OutputDir, b.Dir()), b.CSVName)
	}
	for _, name := range slices.Sorted(maps.Keys(manifests)) {
		p := filepath.Join(g.OutputDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("writing test manifest %s: %w", p, err)
		}
		if err := fsutil.WriteFileAtomic(p, manifests[name], 0o644); err != nil {
			return fmt.Errorf("writing test manifest %s: %w", p, err)
		}
		fmt.Fprintf(g.Out, "wrote %s (storage test manifest)\n", p)
	}
	return nil
}

// validate runs the checks of `bundle validate` on the staged bundles, so generate never
// publishes a bundle that the validator would reject.
func (g *Generate) validate(staging string, bundles []*registryv1.Bundle) error {
	explain := lint.ExplainerFor(g.Operators)
	var failures []string
	for _, b := range bundles {
		for _, p := range lint.Bundle(filepath.Join(staging, b.Dir()), lint.Options{Explain: explain, Release: g.Release}) {
			if p.Level == lint.Error || p.Explained == "" {
				p.File = strings.Replace(p.File, staging, g.OutputDir, 1)
				failures = append(failures, p.String())
			}
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("generated bundles fail validation, nothing was written (fix the definition, or add a waiver that explains a warning):\n%s", strings.Join(failures, "\n"))
	}
	return nil
}

func writeBundle(dir string, b *registryv1.Bundle) error {
	for name, content := range b.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", b.CSVName, err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", b.CSVName, err)
		}
	}
	return nil
}
