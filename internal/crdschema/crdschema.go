// Package crdschema completes generated CRD manifests where controller-gen cannot.
package crdschema

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// RestrictName returns a CRD manifest whose schema, in every version, allows objects of these
// names only: an enum on metadata.name. The API server has enforced schema restrictions of
// metadata.name (and generateName, nothing else of metadata) since apiextensions.k8s.io/v1, that
// is Kubernetes 1.16, where a CEL rule on the name needs 1.25. controller-gen replaces whatever
// schema it would write for metadata with {type: object}, hence this step after it.
func RestrictName(manifest []byte, names ...string) ([]byte, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("no names to allow")
	}
	var crd map[string]any
	if err := yaml.Unmarshal(manifest, &crd); err != nil {
		return nil, fmt.Errorf("decoding the CRD: %w", err)
	}
	versions, found, err := unstructured.NestedSlice(crd, "spec", "versions")
	if err != nil || !found || len(versions) == 0 {
		return nil, fmt.Errorf("the CRD has no spec.versions (%v)", err)
	}
	enum := make([]any, 0, len(names))
	for _, n := range names {
		enum = append(enum, n)
	}
	metadata := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "enum": enum},
		},
	}
	for i, v := range versions {
		version, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.versions[%d] is not an object", i)
		}
		if _, found, err := unstructured.NestedMap(version, "schema", "openAPIV3Schema", "properties"); err != nil || !found {
			return nil, fmt.Errorf("spec.versions[%d] has no schema properties (%v)", i, err)
		}
		if err := unstructured.SetNestedField(version, metadata, "schema", "openAPIV3Schema", "properties", "metadata"); err != nil {
			return nil, fmt.Errorf("spec.versions[%d]: %w", i, err)
		}
		versions[i] = version
	}
	if err := unstructured.SetNestedSlice(crd, versions, "spec", "versions"); err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, fmt.Errorf("encoding the CRD: %w", err)
	}
	// As controller-gen writes it.
	return append([]byte("---\n"), bytes.TrimPrefix(out, []byte("---\n"))...), nil
}

// MustRestrictName is RestrictName for a manifest embedded at build time, whose failure is a
// bug of the build: it panics naming kind.
func MustRestrictName(kind string, manifest []byte, names ...string) []byte {
	out, err := RestrictName(manifest, names...)
	if err != nil {
		panic(fmt.Sprintf("the generated %s CRD: %v", kind, err))
	}
	return out
}
