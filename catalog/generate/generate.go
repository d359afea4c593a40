// Package generate is the `csi-olm catalog generate` verb: it builds the community and certified
// file-based catalogs from the operator definitions and the generated bundle directories.
package generate

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/template"

	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
	"github.com/operator-framework/operator-registry/alpha/action/migrations"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/internal/fsutil"
	"github.com/csi-olm/csi-olm/internal/option"
)

// OpmImage is the opm image catalog images are built from: the operator-registry version this
// module builds with (a test checks they agree).
const OpmImage = "quay.io/operator-framework/opm:v1.73.0"

// Generate writes OutputDir/<catalog>/ and OutputDir/<catalog>.Dockerfile for each catalog.
type Generate struct {
	BundleDir string
	OutputDir string
	// BundleImage is a text/template for bundle image references ({{.Package}}, {{.Name}},
	// {{.Version}}). Empty means offline: no image, bundle manifests embedded.
	BundleImage string
	// BundleImages maps CSV names to the bundle images a release pushed; when set, it replaces
	// BundleImage and every bundle needs an entry.
	BundleImages map[string]string
	Operators    []definition.Operator
	Out          io.Writer
}

// catalogOrder lists the catalogs in the order they are built: the community one first, because
// the certified one is checked against it.
var catalogOrder = []definition.Catalog{definition.Community, definition.Certified}

// Run renders, validates and writes the catalogs.
func (g *Generate) Run(ctx context.Context) error {
	if err := definition.Validate(g.Operators); err != nil {
		return fmt.Errorf("invalid operator definitions, nothing was written:\n%w", err)
	}
	var tmpl *template.Template
	if g.BundleImage != "" {
		var err error
		if tmpl, err = template.New("bundle-image").Option("missingkey=error").Parse(g.BundleImage); err != nil {
			return &option.Error{Field: "BundleImage", Err: err}
		}
	}
	configs := map[definition.Catalog]*declcfg.DeclarativeConfig{}
	var errs []string
	for i := range g.Operators {
		o := &g.Operators[i]
		cfg := configs[o.Catalog]
		if cfg == nil {
			cfg = &declcfg.DeclarativeConfig{}
			configs[o.Catalog] = cfg
		}
		if err := g.addOperator(cfg, o, tmpl); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot build the catalogs, nothing was written:\n%s", strings.Join(errs, "\n"))
	}
	if err := g.validate(configs); err != nil {
		return err
	}
	return g.write(configs)
}

// addOperator adds an operator's package, channels and rendered bundles to a catalog.
func (g *Generate) addOperator(cfg *declcfg.DeclarativeConfig, o *definition.Operator, tmpl *template.Template) error {
	cfg.Packages = append(cfg.Packages, declcfg.Package{
		Schema: declcfg.SchemaPackage, Name: o.Package, DefaultChannel: o.DefaultChannel,
		Icon:        &declcfg.Icon{Data: o.IconSVG, MediaType: "image/svg+xml"},
		Description: o.Description,
	})
	releases := append([]definition.Release(nil), o.Releases...)
	sort.Slice(releases, func(i, j int) bool {
		return semver.MustParse(releases[i].Version).LT(semver.MustParse(releases[j].Version))
	})
	channels := map[string]*declcfg.Channel{}
	var errs []string
	for _, r := range releases {
		csvName := o.CSVName(r.Version)
		dir := filepath.Join(g.BundleDir, o.Package, r.Version)
		image := ""
		if g.BundleImages != nil {
			var ok bool
			if image, ok = g.BundleImages[csvName]; !ok {
				errs = append(errs, fmt.Sprintf("%s: no bundle image was pushed for it", csvName))
				continue
			}
		} else if tmpl != nil {
			var err error
			if image, err = bundleImage(tmpl, o.Package, csvName, r.Version); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", csvName, err))
				continue
			}
		}
		b, err := RenderBundle(dir, image)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: rendering %s (run `csi-olm bundle generate` first): %v", csvName, dir, err))
			continue
		}
		if b.Name != csvName || b.Package != o.Package {
			errs = append(errs, fmt.Sprintf("%s: %s holds %s of package %s: regenerate the bundles", csvName, dir, b.Name, b.Package))
			continue
		}
		cfg.Bundles = append(cfg.Bundles, *b)
		for _, name := range r.Channels {
			ch := channels[name]
			if ch == nil {
				ch = &declcfg.Channel{Schema: declcfg.SchemaChannel, Package: o.Package, Name: name}
				channels[name] = ch
			}
			ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: csvName, Replaces: r.Replaces, Skips: r.Skips, SkipRange: r.SkipRange})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(channels)) {
		cfg.Channels = append(cfg.Channels, *channels[name])
	}
	if o.Deprecation != "" {
		cfg.Deprecations = append(cfg.Deprecations, declcfg.Deprecation{
			Schema: declcfg.SchemaDeprecation, Package: o.Package,
			Entries: []declcfg.DeprecationEntry{{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: o.Deprecation}},
		})
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	if tmpl != nil {
		// Published bundles are pulled by OLM: keep only the CSV metadata OperatorHub shows, as
		// `opm render --migrate-level=bundle-object-to-csv-metadata` does.
		m, err := migrations.NewMigrations("bundle-object-to-csv-metadata")
		if err != nil {
			return err
		}
		return m.Migrate(cfg)
	}
	return nil
}

func bundleImage(tmpl *template.Template, pkg, name, version string) (string, error) {
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, struct{ Package, Name, Version string }{pkg, name, version}); err != nil {
		return "", &option.Error{Field: "BundleImage", Err: err}
	}
	if _, err := reference.ParseNormalizedNamed(buf.String()); err != nil {
		return "", option.Errorf("BundleImage", "gives %q, which is not an image reference: %w", buf.String(), err)
	}
	return buf.String(), nil
}

// validate checks the catalogs as `catalog validate --community` would, before anything is written.
func (g *Generate) validate(configs map[definition.Catalog]*declcfg.DeclarativeConfig) error {
	var community *validation.Catalog
	var failures []string
	for _, name := range catalogOrder {
		cfg, ok := configs[name]
		if !ok {
			continue
		}
		c := validation.FromConfig(cfg, filepath.Join(g.OutputDir, string(name)), ".json")
		opts := validation.Options{Community: community}
		if g.BundleImage == "" {
			opts.Bundles = &validation.BundleSource{FS: os.DirFS(g.BundleDir), Dir: g.BundleDir}
		}
		for _, p := range validation.Check(c, opts) {
			failures = append(failures, p.String())
		}
		if name == definition.Community {
			community = c
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("generated catalogs fail validation, nothing was written:\n%s", strings.Join(failures, "\n"))
	}
	return nil
}

// write stages every catalog and Dockerfile, then swaps each into place.
func (g *Generate) write(configs map[definition.Catalog]*declcfg.DeclarativeConfig) error {
	if err := os.MkdirAll(g.OutputDir, 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(g.OutputDir, ".staging-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	for _, name := range catalogOrder {
		cfg, ok := configs[name]
		if !ok {
			continue
		}
		if err := declcfg.WriteFS(*cfg, filepath.Join(staging, string(name)), declcfg.WriteJSON, ".json"); err != nil {
			return fmt.Errorf("writing the %s catalog: %w", name, err)
		}
	}
	for _, name := range catalogOrder {
		if _, ok := configs[name]; !ok {
			continue
		}
		dst := filepath.Join(g.OutputDir, string(name))
		if err := fsutil.ReplaceDir(filepath.Join(staging, string(name)), dst, staging+".old-"+string(name)); err != nil {
			return err
		}
		if err := fsutil.WriteFileAtomic(dst+".Dockerfile", Dockerfile(string(name), OpmImage, OpmImage), 0o644); err != nil {
			return err
		}
		cfg := configs[name]
		fmt.Fprintf(g.Out, "wrote %s (%d packages, %d channels, %d bundles) and %s.Dockerfile\n",
			dst, len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles), dst)
	}
	return nil
}
