package images

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"sigs.k8s.io/yaml"

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

// Images is `csi-olm catalog images`: it prints what a mirroring tool needs to copy a catalog.
type Images struct {
	// Catalog is the catalog directory.
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
	cfg, err := declcfg.LoadFS(ctx, os.DirFS(a.Catalog))
	if err != nil {
		return fmt.Errorf("load the catalog %s: %w", a.Catalog, err)
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
