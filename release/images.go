package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/csi-olm/csi-olm/bundle/registryv1"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/images/registry"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/output"
)

// Images builds the images of the tree as it is, unpinned: the operator image, one image per
// bundle directory and one per catalog and OpenShift minor, tagged with the minor's index. It
// writes them to an OCI layout, or pushes them.
type Images struct {
	OperatorBinaries []string
	Version          string
	Revision         string
	// OPM and GRPCHealthProbe go into the catalog images, as in Release.
	OPM             string
	GRPCHealthProbe string
	// Bundles holds <package>/<version>/ bundle directories; Catalogs holds the catalogs' trees of
	// per-minor catalogs (catalog/tree).
	Bundles  string
	Catalogs string
	// Registry, when set, is the repository prefix to push under; otherwise the images go to
	// the OCI layout OCILayout, under the same names (org.opencontainers.image.ref.name).
	Registry  string
	OCILayout string
	Client    *registry.Client
	// Output is text (a line per image), json or yaml (an ImagesReport, once all is done).
	Output string
	Out    io.Writer
}

// ImagesReport is what the verb built, as data: the images pushed (by digest) or written to the
// OCI layout (by name).
type ImagesReport struct {
	Images    []string `json:"images"`
	OCILayout string   `json:"ociLayout,omitempty"`
}

// localPrefix names the images of an OCI layout when no registry is given.
const localPrefix = "localhost/csi-olm"

// built is one image and the reference it goes by.
type built struct {
	ref      string
	artifact registry.Artifact
}

// Run builds every image, then writes or pushes them all.
func (a *Images) Run(ctx context.Context) error {
	if err := output.Check(a.Output); err != nil {
		return err
	}
	if (a.Registry == "") == (a.OCILayout == "") {
		return fmt.Errorf("give either a registry to push to or an OCI layout directory to write, not both or neither")
	}
	prefix := a.Registry
	if prefix == "" {
		prefix = localPrefix
	}
	all, err := a.build(prefix)
	if err != nil {
		return err
	}
	report := ImagesReport{Images: []string{}}
	text := !output.Data(a.Output)
	if a.Registry != "" {
		for _, b := range all {
			pushed, err := a.Client.Push(ctx, b.ref, b.artifact)
			if err != nil {
				return err
			}
			report.Images = append(report.Images, pushed)
			if text {
				fmt.Fprintf(a.Out, "pushed %s\n", pushed)
			}
		}
	} else {
		if err := a.writeLayout(all, output.Text(a.Out, a.Output)); err != nil {
			return err
		}
		for _, b := range all {
			report.Images = append(report.Images, b.ref)
		}
		report.OCILayout = a.OCILayout
	}
	if text {
		return nil
	}
	return output.Write(a.Out, a.Output, report)
}

func (a *Images) build(prefix string) ([]built, error) {
	var all []built
	if len(a.OperatorBinaries) > 0 {
		idx, err := operatorIndex(a.OperatorBinaries, a.Version, a.Revision)
		if err != nil {
			return nil, err
		}
		all = append(all, built{fmt.Sprintf("%s/%s:%s", prefix, efs.OperatorName, a.Version), idx})
	}
	dirs, err := filepath.Glob(filepath.Join(a.Bundles, "*", "*", registryv1.AnnotationsFile))
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no bundle in %s: want %s/<package>/<version>/%s", a.Bundles, a.Bundles, registryv1.AnnotationsFile)
	}
	slices.Sort(dirs)
	for _, annotations := range dirs {
		dir := filepath.Dir(filepath.Dir(annotations))
		img, err := images.Bundle(os.DirFS(dir))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		all = append(all, built{BundleImage(prefix, filepath.Base(filepath.Dir(dir)), filepath.Base(dir)), img})
	}
	opm, err := readOPM(a.OPM, a.GRPCHealthProbe)
	if err != nil {
		return nil, err
	}
	// `catalog generate` writes each catalog's minors as <catalog>/v4.N/ next to
	// <catalog>/v4.N.Dockerfile; the folder holds other things too (the Go packages, the graphs).
	dockerfiles, err := filepath.Glob(filepath.Join(a.Catalogs, "*", "v*.Dockerfile"))
	if err != nil {
		return nil, err
	}
	if len(dockerfiles) == 0 {
		return nil, fmt.Errorf("no catalog in %s: want <catalog>/v4.N/ next to <catalog>/v4.N.Dockerfile, as `csi-olm catalog generate` writes them", a.Catalogs)
	}
	slices.Sort(dockerfiles)
	for _, dockerfile := range dockerfiles {
		dir := strings.TrimSuffix(dockerfile, ".Dockerfile")
		m, ok := tree.MinorOf(dir)
		if !ok {
			continue
		}
		img, err := images.Catalog(os.DirFS(dir), opm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		all = append(all, built{CatalogImage(prefix, filepath.Base(filepath.Dir(dir)), m.Index()), img})
	}
	return all, nil
}

// writeLayout writes the images into a fresh OCI layout, replacing the directory only when all
// of them are written.
func (a *Images) writeLayout(all []built, out io.Writer) error {
	staging := a.OCILayout + ".tmp"
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	p, err := layout.Write(staging, empty.Index)
	if err != nil {
		return fmt.Errorf("create the OCI layout: %w", err)
	}
	for _, b := range all {
		opt := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": b.ref})
		switch art := b.artifact.(type) {
		case v1.ImageIndex:
			err = p.AppendIndex(art, opt)
		case v1.Image:
			err = p.AppendImage(art, opt)
		}
		if err != nil {
			return fmt.Errorf("write %s to the OCI layout: %w", b.ref, err)
		}
		fmt.Fprintf(out, "built %s\n", b.ref)
	}
	if err := os.RemoveAll(a.OCILayout); err != nil {
		return err
	}
	if err := os.Rename(staging, a.OCILayout); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %d images to the OCI layout %s\n", len(all), a.OCILayout)
	return nil
}
