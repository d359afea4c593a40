// Package olmv1api names OLM v1's API and the marks operator-controller's Helm-based applier puts on
// what it installs, as the test bed and the migrate verb read and write them. The module that
// defines OLM v1's Go types is built here only as a tool, outside this module's dependencies, so
// its objects are handled as unstructured ones.
package olmv1api

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OLM v1's kinds.
var (
	ClusterCatalogGVK   = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterCatalog"}
	ClusterExtensionGVK = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}
)

// CatalogNameLabel is the label catalogd's webhook puts on every ClusterCatalog, with its name:
// a ClusterExtension's catalog selector matches on it.
const CatalogNameLabel = "olm.operatorframework.io/metadata.name"

// The labels operator-controller puts on every object it applies for a ClusterExtension.
const (
	OwnerKindLabel   = "olm.operatorframework.io/owner-kind"
	OwnerNameLabel   = "olm.operatorframework.io/owner-name"
	PackageNameLabel = "olm.operatorframework.io/package-name"
	BundleNameLabel  = "olm.operatorframework.io/bundle-name"
)

// Helm's ownership metadata. operator-controller installs a bundle as a Helm release named after
// the ClusterExtension, in the ClusterExtension's spec.namespace, and Helm takes over an object
// that already exists only when it carries these three marks naming that release; any other
// existing object fails the install ("exists and cannot be imported into the current release").
const (
	ManagedByLabel             = "app.kubernetes.io/managed-by"
	ManagedByHelm              = "Helm"
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// ConditionField is a field (status, reason, message) of an OLM v1 object's condition, "" when
// it has no such condition.
func ConditionField(u *unstructured.Unstructured, condition, field string) string {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == condition {
			s, _ := m[field].(string)
			return s
		}
	}
	return ""
}
