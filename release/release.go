// Package release is `csi-olm release`: it builds and pushes the project's images, pins every
// image the bundles reference to the digest a registry serves, and writes the pinned bundles and
// the catalogs that publish them. It writes nothing unless every step succeeded.
package release

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/generate"
	"github.com/csi-olm/csi-olm/catalog/mirror"
	"github.com/csi-olm/csi-olm/catalog/render"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/images/registry"
	"github.com/csi-olm/csi-olm/internal/fsutil"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/output"
)

// Files a release writes next to the bundle/ and catalog/ trees.
const (
	ImagesFile   = "images.txt"
	CatalogsFile = "catalogs.txt"
	ImageSetFile = "imageset-config.yaml"
	// ToolsFile is catalogs.txt's companion: the csi-olm image, "csi-olm <image@digest>".
	ToolsFile = "tools.txt"
	// CLIDir holds the csi-olm binaries, csi-olm-<os>-<arch>, and their ChecksumsFile.
	CLIDir        = "cli"
	ChecksumsFile = "SHA256SUMS"
)

// Release pins and publishes one release of every operator.
type Release struct {
	Operators []definition.Operator
	// Registry is the repository prefix the bundle and catalog images are pushed under, e.g.
	// quay.io/csi-olm. Each catalog has one image per OpenShift minor, tagged with the minor's
	// index (certified-catalog:v4.11), as OpenShift's operator indexes are; every release
	// republishes them.
	Registry string
	// OperatorBinaries are the EFS operator's statically linked binaries, one per platform. When
	// set, they are built into the image the newest EFS release references, and pushed there.
	OperatorBinaries []string
	// CLIBinaries are csi-olm's own binaries, one per platform (Linux and macOS). When set, the
	// release carries them with their checksums, and the Linux ones built for opm's platform
	// become the csi-olm image, with opm beside csi-olm.
	CLIBinaries []string
	Version     string
	Revision    string
	// OPM and GRPCHealthProbe are the statically linked opm the catalog images serve with and
	// the probe OLM's registry pods check it with.
	OPM             string
	GRPCHealthProbe string
	Client          *registry.Client
	// OutputDir receives bundle/, catalog/ and the image lists; it is replaced as a whole.
	OutputDir string
	// Output is text (a line per image pushed), json or yaml (a Report, once all is done).
	Output string
	Out    io.Writer

	report Report
}

// Report is what a release published, as data.
type Report struct {
	OutputDir     string          `json:"outputDir"`
	OperatorImage string          `json:"operatorImage,omitempty"`
	CLIImage      string          `json:"cliImage,omitempty"`
	CLIBinaries   []string        `json:"cliBinaries,omitempty"`
	BundleImages  []string        `json:"bundleImages"`
	CatalogImages []PushedCatalog `json:"catalogImages"`
}

// PushedCatalog is a catalog image a release pushed: a catalog's at one OpenShift minor.
type PushedCatalog struct {
	Catalog string `json:"catalog"`
	Minor   string `json:"minor"`
	Image   string `json:"image"`
}

// printf writes a line of the text report.
func (r *Release) printf(format string, args ...any) {
	if !output.Data(r.Output) {
		fmt.Fprintf(r.Out, format+"\n", args...)
	}
}

// Run publishes the release.
func (r *Release) Run(ctx context.Context) error {
	if err := output.Check(r.Output); err != nil {
		return err
	}
	r.report = Report{BundleImages: []string{}, CatalogImages: []PushedCatalog{}}
	if err := definition.Validate(r.Operators); err != nil {
		return fmt.Errorf("invalid operator definitions, nothing was pushed or written:\n%w", err)
	}
	if _, err := name.NewTag(CatalogImage(r.Registry, string(definition.Community), "v4.11"), name.StrictValidation); err != nil {
		return fmt.Errorf("registry %q makes no catalog image reference: %w", r.Registry, err)
	}
	opm, err := readOPM(r.OPM, r.GRPCHealthProbe)
	if err != nil {
		return err
	}
	if len(r.OperatorBinaries) > 0 {
		if err := r.pushOperator(ctx); err != nil {
			return err
		}
	}
	pinned, err := r.Client.PinAll(ctx, Wants(r.Operators))
	if err != nil {
		return fmt.Errorf("nothing was written: %w", err)
	}
	operators := Pin(r.Operators, pinned)

	if err := os.MkdirAll(filepath.Dir(filepath.Clean(r.OutputDir)), 0o755); err != nil {
		return err
	}
	staging, err := os.MkdirTemp(filepath.Dir(filepath.Clean(r.OutputDir)), ".release-staging-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	// MkdirTemp makes the directory private; the release is for everyone to read.
	if err := os.Chmod(staging, 0o755); err != nil {
		return err
	}
	bundles := filepath.Join(staging, "bundle")
	gen := generate.Generate{OutputDir: bundles, Operators: operators, Release: true, Out: io.Discard}
	if err := gen.Run(ctx); err != nil {
		return fmt.Errorf("the pinned bundles, nothing was written: %w", err)
	}
	bundleImages, err := r.pushBundles(ctx, bundles, operators)
	if err != nil {
		return fmt.Errorf("nothing was written: %w", err)
	}
	catalogs := filepath.Join(staging, "catalog")
	cat := render.Generate{BundleDir: bundles, OutputDir: catalogs, BundleImages: bundleImages, Operators: operators, Out: io.Discard}
	if err := cat.Run(ctx); err != nil {
		return fmt.Errorf("the published catalogs, nothing was written: %w", err)
	}
	if err := r.publishCatalogs(ctx, staging, opm); err != nil {
		return fmt.Errorf("nothing was written: %w", err)
	}
	if len(r.CLIBinaries) > 0 {
		if err := r.publishCLI(ctx, staging, opm); err != nil {
			return fmt.Errorf("nothing was written: %w", err)
		}
	}
	if err := fsutil.ReplaceDir(staging, r.OutputDir, staging+".old"); err != nil {
		return err
	}
	r.printf("wrote the release to %s", r.OutputDir)
	if output.Data(r.Output) {
		r.report.OutputDir = r.OutputDir
		return output.Write(r.Out, r.Output, r.report)
	}
	return nil
}

// pushOperator builds the EFS operator image and pushes it where the newest release names it.
func (r *Release) pushOperator(ctx context.Context) error {
	ref, err := HeadOperatorImage(r.Operators)
	if err != nil {
		return err
	}
	idx, err := operatorIndex(r.OperatorBinaries, r.Version, r.Revision)
	if err != nil {
		return err
	}
	pushed, err := r.Client.Push(ctx, ref, idx)
	if err != nil {
		return fmt.Errorf("nothing was written: %w", err)
	}
	r.report.OperatorImage = pushed
	r.printf("pushed operator image %s", pushed)
	return nil
}

// operatorIndex reads the operator binaries and builds their image index.
func operatorIndex(paths []string, version, revision string) (v1.ImageIndex, error) {
	var binaries [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read the operator binary: %w", err)
		}
		binaries = append(binaries, b)
	}
	return images.OperatorIndex(binaries, nil, version, revision)
}

// HeadOperatorImage is the operator image of the newest EFS operator release: the one built
// from this source.
func HeadOperatorImage(operators []definition.Operator) (string, error) {
	for _, o := range operators {
		if o.CSVPrefix == efs.OperatorName && len(o.Releases) > 0 {
			return o.Releases[len(o.Releases)-1].OperatorImage, nil
		}
	}
	return "", fmt.Errorf("no %s definition has a release", efs.OperatorName)
}

// Wants lists every image of every release, with the platforms its operator declares.
func Wants(operators []definition.Operator) []registry.Want {
	var wants []registry.Want
	for _, o := range operators {
		var platforms []v1.Platform
		for _, arch := range o.Architectures {
			platforms = append(platforms, v1.Platform{OS: "linux", Architecture: arch})
		}
		for _, rel := range o.Releases {
			wants = append(wants, registry.Want{Ref: rel.OperatorImage, Platforms: platforms})
			for _, img := range rel.Images {
				wants = append(wants, registry.Want{Ref: img.Ref, Platforms: platforms})
			}
		}
	}
	return wants
}

// Pin returns a copy of the operators with every image replaced by its pinned reference.
func Pin(operators []definition.Operator, pinned map[string]string) []definition.Operator {
	out := slices.Clone(operators)
	for i := range out {
		out[i].Releases = slices.Clone(out[i].Releases)
		for j := range out[i].Releases {
			rel := &out[i].Releases[j]
			rel.OperatorImage = pinned[rel.OperatorImage]
			rel.Images = slices.Clone(rel.Images)
			for k := range rel.Images {
				rel.Images[k].Ref = pinned[rel.Images[k].Ref]
			}
		}
	}
	return out
}

// BundleImage is where a release's bundle image is pushed.
func (r *Release) BundleImage(o *definition.Operator, version string) string {
	return BundleImage(r.Registry, o.Package, version)
}

// BundleImage names the bundle image of a package's version under a registry prefix.
func BundleImage(registry, pkg, version string) string {
	return fmt.Sprintf("%s/%s-bundle:v%s", strings.TrimSuffix(registry, "/"), pkg, version)
}

// CatalogImage names a catalog's image under a registry prefix; tag is the index of the
// OpenShift minor the catalog is for.
func CatalogImage(registry, catalog, tag string) string {
	return fmt.Sprintf("%s/%s-catalog:%s", strings.TrimSuffix(registry, "/"), catalog, tag)
}

// pushBundles builds and pushes the image of every pinned bundle and returns them by CSV name.
func (r *Release) pushBundles(ctx context.Context, dir string, operators []definition.Operator) (map[string]string, error) {
	pushedByCSV := map[string]string{}
	for i := range operators {
		o := &operators[i]
		for _, rel := range o.Releases {
			img, err := images.Bundle(os.DirFS(filepath.Join(dir, o.Package, rel.Version)))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", o.CSVName(rel.Version), err)
			}
			pushed, err := r.Client.Push(ctx, r.BundleImage(o, rel.Version), img)
			if err != nil {
				return nil, err
			}
			pushedByCSV[o.CSVName(rel.Version)] = pushed
			r.report.BundleImages = append(r.report.BundleImages, pushed)
			r.printf("pushed bundle image %s", pushed)
		}
	}
	return pushedByCSV, nil
}

// publishCatalogs checks that the published catalogs carry only digests, pushes the image of
// each minor's catalog and writes the image lists: catalogs.txt has one line per image,
// "<catalog> <minor> <image@digest>".
func (r *Release) publishCatalogs(ctx context.Context, staging string, opm *images.OPM) error {
	var all []mirror.Image
	var catalogLines []string
	var imageSet *mirror.ImageSetConfiguration
	for _, name := range []definition.Catalog{definition.Community, definition.Certified} {
		t, err := tree.Open(filepath.Join(staging, "catalog", string(name)))
		if err != nil {
			return fmt.Errorf("the %s catalogs: %w", name, err)
		}
		for _, m := range t.Minors {
			dir := t.Path(m)
			cfg, err := declcfg.LoadFS(ctx, os.DirFS(dir))
			if err != nil {
				return fmt.Errorf("load the %s catalog of %s: %w", name, m.Index(), err)
			}
			list := mirror.List(cfg)
			if problems := mirror.Unpinned(list); len(problems) > 0 {
				return fmt.Errorf("the %s catalog of %s references images by tag:\n  %s", name, m.Index(), strings.Join(problems, "\n  "))
			}
			img, err := images.Catalog(os.DirFS(dir), opm)
			if err != nil {
				return fmt.Errorf("the %s catalog of %s: %w", name, m.Index(), err)
			}
			pushed, err := r.Client.Push(ctx, CatalogImage(r.Registry, string(name), m.Index()), img)
			if err != nil {
				return err
			}
			r.report.CatalogImages = append(r.report.CatalogImages, PushedCatalog{Catalog: string(name), Minor: m.Index(), Image: pushed})
			r.printf("pushed catalog image %s", pushed)
			catalogLines = append(catalogLines, fmt.Sprintf("%s %s %s\n", name, m.Index(), pushed))
			all = append(all, list...)
			set := mirror.ImageSet(pushed, cfg)
			if imageSet == nil {
				imageSet = set
			} else {
				imageSet.Mirror.Operators = append(imageSet.Mirror.Operators, set.Mirror.Operators...)
			}
		}
	}
	var refs []string
	for _, img := range all {
		refs = append(refs, img.Ref)
	}
	slices.Sort(refs)
	imageSetYAML, err := yaml.Marshal(imageSet)
	if err != nil {
		return err
	}
	for file, content := range map[string][]byte{
		ImagesFile:   []byte(strings.Join(slices.Compact(refs), "\n") + "\n"),
		CatalogsFile: []byte(strings.Join(catalogLines, "")),
		ImageSetFile: imageSetYAML,
	} {
		if err := os.WriteFile(filepath.Join(staging, file), content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// readOPM reads and packs the opm and grpc_health_probe the catalog images serve with.
func readOPM(opmPath, probePath string) (*images.OPM, error) {
	// Both are asked for before either is read, so a first run learns of both at once.
	var missing []error
	if opmPath == "" {
		missing = append(missing, errors.New("--opm: no opm for the catalog images to serve with (hack/tools.sh opm builds it; $CSI_OLM_OPM is the default)"))
	}
	if probePath == "" {
		missing = append(missing, errors.New("--grpc-health-probe: no grpc_health_probe for the catalog images (hack/tools.sh grpc_health_probe builds it; $CSI_OLM_GRPC_HEALTH_PROBE is the default)"))
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	opm, err := os.ReadFile(opmPath)
	if err != nil {
		return nil, fmt.Errorf("--opm: reading opm: %w", err)
	}
	probe, err := os.ReadFile(probePath)
	if err != nil {
		return nil, fmt.Errorf("--grpc-health-probe: reading grpc_health_probe: %w", err)
	}
	packed, err := images.NewOPM(opm, probe)
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", opmPath, probePath, err)
	}
	return packed, nil
}

// publishCLI writes csi-olm's binaries and their checksums into the release, and pushes the
// csi-olm image, <registry>/csi-olm:<version>, of the one built for opm's platform.
func (r *Release) publishCLI(ctx context.Context, staging string, opm *images.OPM) error {
	opmPlatform := opm.Platform()
	dir := filepath.Join(staging, CLIDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var sums []string
	var platforms []v1.Platform
	var image v1.Image
	for _, path := range r.CLIBinaries {
		binary, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--cli-binary: %w", err)
		}
		platform, err := images.ExecutablePlatform(path, binary)
		if err != nil {
			return fmt.Errorf("--cli-binary: %w", err)
		}
		if slices.ContainsFunc(platforms, platform.Equals) {
			return fmt.Errorf("--cli-binary: two binaries are built for %s", platform)
		}
		platforms = append(platforms, platform)
		name := "csi-olm-" + platform.OS + "-" + platform.Architecture
		if err := os.WriteFile(filepath.Join(dir, name), binary, 0o755); err != nil {
			return err
		}
		sums = append(sums, fmt.Sprintf("%x  %s\n", sha256.Sum256(binary), name))
		r.report.CLIBinaries = append(r.report.CLIBinaries, filepath.Join(CLIDir, name))
		if platform.Equals(opmPlatform) {
			if image, err = images.CLI(binary, opm, r.Version, r.Revision); err != nil {
				return err
			}
		}
	}
	// By file name, as sha256sum writes them.
	slices.SortFunc(sums, func(a, b string) int { return strings.Compare(a[64:], b[64:]) })
	if err := os.WriteFile(filepath.Join(dir, ChecksumsFile), []byte(strings.Join(sums, "")), 0o644); err != nil {
		return err
	}
	if image == nil {
		return fmt.Errorf("--cli-binary: none is built for %s, opm's platform, so there is no csi-olm image to build", opmPlatform)
	}
	pushed, err := r.Client.Push(ctx, CLIImage(r.Registry, r.Version), image)
	if err != nil {
		return err
	}
	r.report.CLIImage = pushed
	r.printf("pushed csi-olm image %s", pushed)
	return os.WriteFile(filepath.Join(staging, ToolsFile), []byte("csi-olm "+pushed+"\n"), 0o644)
}

// CLIImage is where a release's csi-olm image is pushed.
func CLIImage(registry, version string) string {
	return registry + "/csi-olm:" + version
}
