package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/image"
	"github.com/operator-framework/operator-registry/pkg/registry"
)

// RenderBundle reads a bundle directory into an olm.bundle the way `opm render <dir>` does, with
// operator-registry's bundle parser: the same properties (olm.package, olm.gvk, the embedded
// olm.bundle.object manifests...) and related images. image is the bundle's image reference, or
// "" for an offline bundle. (opm's render action itself pulls in cgo gpgme; a test checks this
// rendering against the opm binary's.)
func RenderBundle(dir, bundleImage string) (*declcfg.Bundle, error) {
	input, err := registry.NewImageInput(image.SimpleReference(""), dir)
	if err != nil {
		return nil, err
	}
	b := input.Bundle
	b.BundleImage = bundleImage
	objs, props, err := registry.ObjectsAndPropertiesFromBundle(b)
	if err != nil {
		return nil, fmt.Errorf("properties of bundle %q: %w", b.Name, err)
	}
	related, err := relatedImages(b)
	if err != nil {
		return nil, fmt.Errorf("related images of bundle %q: %w", b.Name, err)
	}
	var csvJSON []byte
	for _, obj := range b.Objects {
		if obj.GetKind() == "ClusterServiceVersion" {
			if csvJSON, err = json.Marshal(obj); err != nil {
				return nil, err
			}
		}
	}
	return &declcfg.Bundle{
		Schema: declcfg.SchemaBundle, Name: b.Name, Package: b.Package, Image: bundleImage,
		Properties: objectsLast(props), RelatedImages: related, Objects: objs, CsvJSON: string(csvJSON),
	}, nil
}

// relatedImages lists the CSV's relatedImages, the bundle image and the images of the operator's
// Deployments that the list lacks, sorted by image, as opm does.
func relatedImages(b *registry.Bundle) ([]declcfg.RelatedImage, error) {
	csv, err := b.ClusterServiceVersion()
	if err != nil {
		return nil, err
	}
	var spec struct {
		RelatedImages []declcfg.RelatedImage `json:"relatedImages"`
	}
	if err := json.Unmarshal(csv.Spec, &spec); err != nil {
		return nil, err
	}
	images := spec.RelatedImages
	seen := map[string]bool{}
	for _, ri := range images {
		seen[ri.Image] = true
	}
	if b.BundleImage != "" && !seen[b.BundleImage] {
		images = append(images, declcfg.RelatedImage{Image: b.BundleImage})
		seen[b.BundleImage] = true
	}
	operatorImages, err := csv.GetOperatorImages()
	if err != nil {
		return nil, err
	}
	for _, img := range slices.Sorted(maps.Keys(operatorImages)) {
		if !seen[img] {
			images = append(images, declcfg.RelatedImage{Image: img})
			seen[img] = true
		}
	}
	sort.Slice(images, func(i, j int) bool { return images[i].Image < images[j].Image })
	return images, nil
}

// objectsLast moves manifests to the end of the properties, where opm puts them.
func objectsLast(props []property.Property) []property.Property {
	var others, objects []property.Property
	for _, p := range props {
		if p.Type == property.TypeBundleObject || p.Type == property.TypeCSVMetadata {
			objects = append(objects, p)
		} else {
			others = append(others, p)
		}
	}
	return append(others, objects...)
}
