// Package images lists every image a file-based catalog needs, in the forms mirroring tools read:
// a plain list, an ImageDigestMirrorSet for the cluster, and an oc-mirror ImageSetConfiguration.
package mirror

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/distribution/reference"
	configv1 "github.com/openshift/api/config/v1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/catalog/index"
)

// Image is one image of a catalog and what needs it.
type Image struct {
	Ref string
	// Users are "<bundle>: <related image name>" entries, or "<bundle>: bundle image".
	Users []string
}

// List returns every bundle and related image of the catalog, once each, sorted by reference.
func List(cfg *declcfg.DeclarativeConfig) []Image {
	users := map[string][]string{}
	for _, b := range cfg.Bundles {
		if b.Image != "" {
			users[b.Image] = append(users[b.Image], b.Name+": bundle image")
		}
		for _, ri := range b.RelatedImages {
			if ri.Image == "" || ri.Image == b.Image {
				continue
			}
			name := cmp.Or(ri.Name, "related image")
			users[ri.Image] = append(users[ri.Image], b.Name+": "+name)
		}
	}
	list := make([]Image, 0, len(users))
	for ref, u := range users {
		slices.Sort(u)
		list = append(list, Image{Ref: ref, Users: slices.Compact(u)})
	}
	slices.SortFunc(list, func(a, b Image) int { return cmp.Compare(a.Ref, b.Ref) })
	return list
}

// Unpinned returns every image not pinned by digest, with what needs it: mirrors by digest
// cannot serve those.
func Unpinned(list []Image) []string {
	var problems []string
	for _, img := range list {
		named, err := reference.ParseNormalizedNamed(img.Ref)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s): not an image reference: %v", img.Ref, strings.Join(img.Users, "; "), err))
			continue
		}
		if _, ok := named.(reference.Digested); !ok {
			problems = append(problems, fmt.Sprintf("%s (%s): not pinned by digest", img.Ref, strings.Join(img.Users, "; ")))
		}
	}
	return problems
}

// DigestMirrorSet maps the repository of every image to its copy under mirror, the way
// oc-mirror lays a registry out: quay.io/csi-olm/x is mirrored to <mirror>/csi-olm/x. Clusters
// apply it so that pulls by digest go to the mirror. The images must be pinned.
func DigestMirrorSet(name, mirror string, list []Image) (*configv1.ImageDigestMirrorSet, error) {
	if problems := Unpinned(list); len(problems) > 0 {
		return nil, fmt.Errorf("an ImageDigestMirrorSet only redirects pulls by digest, and %d images are not pinned (`csi-olm release` pins them):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	mirror = strings.TrimSuffix(mirror, "/")
	paths := map[string]string{}
	for _, img := range list {
		named, _ := reference.ParseNormalizedNamed(img.Ref)
		paths[named.Name()] = reference.Path(named)
	}
	set := &configv1.ImageDigestMirrorSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: configv1.GroupVersion.String(), Kind: "ImageDigestMirrorSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	for _, repo := range slices.Sorted(maps.Keys(paths)) {
		set.Spec.ImageDigestMirrors = append(set.Spec.ImageDigestMirrors, configv1.ImageDigestMirrors{
			Source:  repo,
			Mirrors: []configv1.ImageMirror{configv1.ImageMirror(mirror + "/" + paths[repo])},
		})
	}
	return set, nil
}

// ImageSetConfiguration is oc-mirror's (v2) description of what to mirror. Only the fields
// csi-olm fills are declared; oc-mirror defaults the others.
type ImageSetConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	Mirror          ImageSetMirror `json:"mirror"`
}

// ImageSetMirror lists the operator catalogs and extra images to mirror.
type ImageSetMirror struct {
	Operators        []OperatorCatalog `json:"operators,omitempty"`
	AdditionalImages []AdditionalImage `json:"additionalImages,omitempty"`
}

// OperatorCatalog is one catalog image and the packages and channels of it to mirror.
type OperatorCatalog struct {
	Catalog  string           `json:"catalog"`
	Packages []IncludePackage `json:"packages,omitempty"`
}

// IncludePackage is one package of a catalog.
type IncludePackage struct {
	Name     string           `json:"name"`
	Channels []IncludeChannel `json:"channels,omitempty"`
}

// IncludeChannel is one channel of a package.
type IncludeChannel struct {
	Name string `json:"name"`
}

// AdditionalImage is an image mirrored on its own.
type AdditionalImage struct {
	Name string `json:"name"`
}

// ImageSet describes, for oc-mirror, the catalog image catalogRef with every package and
// channel of cfg, so that mirroring it copies every bundle and related image the catalog needs.
func ImageSet(catalogRef string, cfg *declcfg.DeclarativeConfig) *ImageSetConfiguration {
	op := OperatorCatalog{Catalog: catalogRef}
	for _, p := range index.New(cfg).Packages() {
		if p.Decl == nil {
			continue
		}
		pkg := IncludePackage{Name: p.Name}
		for _, ch := range p.ChannelNames() {
			pkg.Channels = append(pkg.Channels, IncludeChannel{Name: ch})
		}
		op.Packages = append(op.Packages, pkg)
	}
	return &ImageSetConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "mirror.openshift.io/v2alpha1", Kind: "ImageSetConfiguration"},
		Mirror:   ImageSetMirror{Operators: []OperatorCatalog{op}},
	}
}
