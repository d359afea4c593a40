// Package generate is the `csi-olm catalog generate` verb: it builds the community and certified
// file-based catalogs from the operator definitions and the generated bundle directories.
package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/internal/fsutil"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/option"
)

// OpmImage is the opm image catalog images are built from: the operator-registry version this
// module builds with (a test checks they agree).
const OpmImage = "quay.io/operator-framework/opm:v1.73.0"

// Generate writes OutputDir/<catalog>/v4.N/ and OutputDir/<catalog>/v4.N.Dockerfile for each
// catalog and each OpenShift minor whose index holds one of its releases (catalog/tree).
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

// minorCatalog is one catalog of one minor.
type minorCatalog struct {
	catalog definition.Catalog
	minor   openshift.Minor
	cfg     *declcfg.DeclarativeConfig
}

func (c *minorCatalog) dir(root string) string {
	return tree.Path(filepath.Join(root, string(c.catalog)), c.minor)
}

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
	// A release goes into every minor its com.redhat.openshift.versions selects: it is rendered once.
	bundles := map[string]*declcfg.Bundle{}
	var errs []string
	for i := range g.Operators {
		if err := g.render(&g.Operators[i], tmpl, bundles); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot build the catalogs, nothing was written:\n%s", strings.Join(errs, "\n"))
	}
	minors := definition.CatalogMinors(g.Operators)
	var catalogs []*minorCatalog
	for _, name := range catalogOrder {
		for _, m := range minors[name] {
			c := &minorCatalog{catalog: name, minor: m, cfg: &declcfg.DeclarativeConfig{}}
			for i := range g.Operators {
				o := &g.Operators[i]
				if releases := o.ReleasesIn(m); o.Catalog == name && len(releases) > 0 {
					addOperator(c.cfg, o, releases, bundles)
				}
			}
			if tmpl != nil {
				// Published bundles are pulled by OLM: keep only the CSV metadata OperatorHub
				// shows, as `opm render --migrate-level=bundle-object-to-csv-metadata` does.
				mig, err := migrations.NewMigrations("bundle-object-to-csv-metadata")
				if err != nil {
					return err
				}
				if err := mig.Migrate(c.cfg); err != nil {
					return fmt.Errorf("the %s catalog of %s: %w", name, m.Index(), err)
				}
			}
			catalogs = append(catalogs, c)
		}
	}
	if err := g.validate(catalogs); err != nil {
		return err
	}
	return g.write(catalogs)
}

// render renders each release's bundle directory, under the image it is published as.
func (g *Generate) render(o *definition.Operator, tmpl *template.Template, bundles map[string]*declcfg.Bundle) error {
	var errs []string
	for _, r := range o.Releases {
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
		bundles[csvName] = b
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// addOperator adds an operator's package, and the channels and bundles of the given releases, to
// a catalog.
func addOperator(cfg *declcfg.DeclarativeConfig, o *definition.Operator, releases []definition.Release, bundles map[string]*declcfg.Bundle) {
	cfg.Packages = append(cfg.Packages, declcfg.Package{
		Schema: declcfg.SchemaPackage, Name: o.Package, DefaultChannel: o.DefaultChannel,
		Icon:        &declcfg.Icon{Data: o.IconSVG, MediaType: "image/svg+xml"},
		Description: o.Description,
	})
	releases = slices.Clone(releases)
	sort.Slice(releases, func(i, j int) bool {
		return semver.MustParse(releases[i].Version).LT(semver.MustParse(releases[j].Version))
	})
	channels := map[string]*declcfg.Channel{}
	for _, r := range releases {
		csvName := o.CSVName(r.Version)
		// A copy: the migration of published catalogs rewrites each catalog's bundles.
		b := *bundles[csvName]
		b.Properties = slices.Clone(b.Properties)
		b.Objects = slices.Clone(b.Objects)
		b.RelatedImages = slices.Clone(b.RelatedImages)
		cfg.Bundles = append(cfg.Bundles, b)
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

// validate checks each catalog as `catalog validate --community` would, the certified catalog of
// a minor against the community catalog of the same minor, before anything is written.
func (g *Generate) validate(catalogs []*minorCatalog) error {
	community := map[openshift.Minor]*validation.Catalog{}
	var failures []string
	for _, mc := range catalogs {
		c := validation.FromConfig(mc.cfg, mc.dir(g.OutputDir), ".json")
		opts := validation.Options{Minor: &mc.minor}
		if mc.catalog != definition.Community {
			opts.Community = community[mc.minor]
		}
		if g.BundleImage == "" {
			opts.Bundles = &validation.BundleSource{FS: os.DirFS(g.BundleDir), Dir: g.BundleDir}
		} else {
			// Published catalogs carry olm.csv.metadata at every minor by design, served by this
			// module's opm: Konflux's wish for olm.bundle.object before 4.17 is not theirs.
			opts.Settings = map[string]validation.Setting{validation.RuleBundleMetadataFormat: validation.Off}
		}
		for _, p := range validation.Check(c, opts) {
			failures = append(failures, p.String())
		}
		if mc.catalog == definition.Community {
			community[mc.minor] = c
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("generated catalogs fail validation, nothing was written:\n%s", strings.Join(failures, "\n"))
	}
	return nil
}

// write stages every catalog tree with its Dockerfiles, then swaps each into place whole, so
// that a minor no release declares any more leaves no catalog behind.
func (g *Generate) write(catalogs []*minorCatalog) error {
	if err := os.MkdirAll(g.OutputDir, 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(g.OutputDir, ".staging-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	written := map[definition.Catalog]bool{}
	for _, mc := range catalogs {
		dir := mc.dir(staging)
		if err := declcfg.WriteFS(*mc.cfg, dir, declcfg.WriteJSON, ".json"); err != nil {
			return fmt.Errorf("writing the %s catalog of %s: %w", mc.catalog, mc.minor.Index(), err)
		}
		if err := os.WriteFile(dir+".Dockerfile", Dockerfile(mc.minor.Index(), OpmImage, OpmImage), 0o644); err != nil {
			return err
		}
		written[mc.catalog] = true
	}
	for _, name := range catalogOrder {
		if !written[name] {
			continue
		}
		dst := filepath.Join(g.OutputDir, string(name))
		if err := fsutil.ReplaceDir(filepath.Join(staging, string(name)), dst, staging+".old-"+string(name)); err != nil {
			return err
		}
		// The single catalog of earlier releases of csi-olm had its Dockerfile here.
		if err := os.Remove(dst + ".Dockerfile"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, mc := range catalogs {
		dst := mc.dir(g.OutputDir)
		fmt.Fprintf(g.Out, "wrote %s (%d packages, %d channels, %d bundles) and %s.Dockerfile\n",
			dst, len(mc.cfg.Packages), len(mc.cfg.Channels), len(mc.cfg.Bundles), dst)
	}
	return nil
}
