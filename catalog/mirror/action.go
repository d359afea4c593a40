package mirror

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/option"
)

// The output formats of `csi-olm catalog images`.
const (
	FormatList     = "list"
	FormatIDMS     = "idms"
	FormatImageSet = "imageset"
)

// Formats lists the output formats.
var Formats = []string{FormatList, FormatIDMS, FormatImageSet}

// Images is `csi-olm catalog images`: it prints what a mirroring tool needs to copy a catalog,
// or every catalog of a tree of per-minor catalogs.
type Images struct {
	// Catalog is the catalog directory, or a tree of per-minor catalogs (catalog/tree).
	Catalog string
	Format  string
	// Mirror is the registry an ImageDigestMirrorSet redirects to.
	Mirror string
	// CatalogImage is the catalog image an ImageSetConfiguration names.
	CatalogImage string
	// Name names the ImageDigestMirrorSet.
	Name string
	Out  io.Writer
}

// Run loads the catalog and prints its images in the format asked for.
func (a *Images) Run(ctx context.Context) error {
	switch {
	case a.Format == FormatIDMS && a.Mirror == "":
		return option.Errorf("Mirror", "the idms format needs the registry the cluster pulls from instead")
	case a.Format == FormatImageSet && a.CatalogImage == "":
		return option.Errorf("CatalogImage", "the imageset format needs the image the catalog is published in")
	}
	cfg, err := a.load(ctx)
	if err != nil {
		return err
	}
	list := List(cfg)
	var out []byte
	switch a.Format {
	case FormatList:
		var sb strings.Builder
		for _, img := range list {
			fmt.Fprintln(&sb, img.Ref)
		}
		out = []byte(sb.String())
	case FormatIDMS:
		set, err := DigestMirrorSet(a.Name, a.Mirror, list)
		if err != nil {
			return fmt.Errorf("%s: %w", a.Catalog, err)
		}
		if out, err = yaml.Marshal(set); err != nil {
			return err
		}
	case FormatImageSet:
		if out, err = yaml.Marshal(ImageSet(a.CatalogImage, cfg)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown format %q: want one of %s", a.Format, strings.Join(Formats, ", "))
	}
	_, err = a.Out.Write(out)
	return err
}

// load reads the catalog, or the bundles of every minor's catalog of a tree: a mirror of the
// tree carries the images of them all.
func (a *Images) load(ctx context.Context) (*declcfg.DeclarativeConfig, error) {
	if !tree.IsTree(a.Catalog) {
		return loadOne(ctx, a.Catalog)
	}
	if a.Format == FormatImageSet {
		return nil, fmt.Errorf("catalog %s is a tree of per-minor catalogs, each published in its own image: give the catalog of the minor the catalog image holds", a.Catalog)
	}
	t, err := tree.Open(a.Catalog)
	if err != nil {
		return nil, err
	}
	all := &declcfg.DeclarativeConfig{}
	for _, m := range t.Minors {
		cfg, err := loadOne(ctx, t.Path(m))
		if err != nil {
			return nil, err
		}
		all.Bundles = append(all.Bundles, cfg.Bundles...)
	}
	return all, nil
}

// loadOne reads one catalog, a directory or an image.
func loadOne(ctx context.Context, arg string) (*declcfg.DeclarativeConfig, error) {
	c, err := load.Open(ctx, arg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	cfg, err := declcfg.LoadFS(ctx, c.FS)
	if err != nil {
		return nil, fmt.Errorf("load the catalog %s: %w", arg, err)
	}
	return cfg, nil
}
