// Package definition holds the typed description of an operator and its release history: the
// single source of truth from which csi-olm generates OLM bundles and catalogs.
package definition

import (
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Operator describes one operator of one OLM package and every release of it.
type Operator struct {
	// Package is the OLM package name. Two operators may share a package: the community and the
	// supported EFS operators do, so that a Subscription can switch between them.
	Package string
	// CSVPrefix is the CSV name before ".v<version>".
	CSVPrefix string
	// Catalog is the catalog this operator is published in (community or certified).
	Catalog Catalog

	DisplayName string
	// Summary is the one-line description shown on OperatorHub tiles.
	Summary string
	// Description is the Markdown text of the OperatorHub details page.
	Description  string
	Keywords     []string
	Maintainers  []v1alpha1.Maintainer
	Provider     v1alpha1.AppLink
	Links        []v1alpha1.AppLink
	IconSVG      []byte
	Categories   []string
	Capabilities string
	Repository   string
	Support      string

	// SuggestedNamespace is where OperatorHub proposes to install the operator.
	SuggestedNamespace string
	// InfrastructureFeatures are the OpenShift infrastructure features the operator supports
	// (see InfrastructureFeature).
	InfrastructureFeatures []InfrastructureFeature
	// OpenShiftVersions is the com.redhat.openshift.versions range of the bundles, and
	// MinKubeVersion their minKubeVersion, for an operator whose releases declare no OpenShift
	// minor (Release.OpenShift); one that does derives both from it and leaves these empty.
	OpenShiftVersions string
	MinKubeVersion    string
	// Architectures the operator's images are built for.
	Architectures []string

	DefaultChannel string
	// InstallModes lists the supported install modes; every other mode is declared unsupported.
	InstallModes []v1alpha1.InstallModeType

	OwnedCRDs []OwnedCRD
	// NativeAPIs are APIs the cluster must serve for the operator to work (OLM checks them).
	NativeAPIs []metav1.GroupVersionKind
	// InitializationResource is the object an admin creates to put the operator to work, when
	// that object's API is not one the operator owns; OperatorHub offers to create it after the
	// install (operatorframework.io/initialization-resource). alm-examples may only show owned
	// APIs, and owning OpenShift's ClusterCSIDriver CRD would hand that CRD to OLM.
	InitializationResource runtime.Object

	ServiceAccount string
	// ClusterRules are the operator's cluster-wide permissions; NamespaceRules are granted in the
	// namespace the operator runs in.
	ClusterRules   []rbacv1.PolicyRule
	NamespaceRules []rbacv1.PolicyRule

	// Manifests are further objects of every bundle, which OLM creates in the operator's
	// namespace: the Service and ServiceMonitor of the operator's metrics, and the RBAC that lets
	// the monitoring stack find them.
	Manifests []runtime.Object
	// ClusterMonitoring asks OperatorHub to label the operator's namespace for the cluster
	// monitoring stack (operatorframework.io/cluster-monitoring).
	ClusterMonitoring bool

	DeploymentName string
	// Deployment builds the operator Deployment of a release; images come from the release.
	Deployment func(Release) appsv1.DeploymentSpec

	Releases []Release

	// Waivers explain validator warnings that are expected for this operator.
	Waivers []Waiver

	// Deprecation, when set, deprecates the operator's package in its catalog with this message
	// (an olm.deprecations entry, which OLM shows on Subscriptions).
	Deprecation string
}

// Catalog names the file-based catalog an operator is published in.
type Catalog string

const (
	// Community is the catalog of the community aws-efs-operator.
	Community Catalog = "community"
	// Certified is the catalog of the supported operators.
	Certified Catalog = "certified"
)

// InfrastructureFeature is an OpenShift infrastructure feature an operator declares support for.
type InfrastructureFeature string

// The infrastructure features OpenShift's OperatorHub filters on.
const (
	Disconnected   InfrastructureFeature = "disconnected"
	ProxyAware     InfrastructureFeature = "proxy-aware"
	FIPS           InfrastructureFeature = "fips"
	TLSProfiles    InfrastructureFeature = "tls-profiles"
	TokenAuthAWS   InfrastructureFeature = "token-auth-aws"
	TokenAuthAzure InfrastructureFeature = "token-auth-azure"
	TokenAuthGCP   InfrastructureFeature = "token-auth-gcp"
	CSI            InfrastructureFeature = "csi"
)

// FeatureAnnotations maps each infrastructure feature to its features.operators.openshift.io
// annotation; every CSV carries all of them, "true" or "false".
var FeatureAnnotations = map[InfrastructureFeature]string{
	Disconnected:   "features.operators.openshift.io/disconnected",
	ProxyAware:     "features.operators.openshift.io/proxy-aware",
	FIPS:           "features.operators.openshift.io/fips-compliant",
	TLSProfiles:    "features.operators.openshift.io/tls-profiles",
	TokenAuthAWS:   "features.operators.openshift.io/token-auth-aws",
	TokenAuthAzure: "features.operators.openshift.io/token-auth-azure",
	TokenAuthGCP:   "features.operators.openshift.io/token-auth-gcp",
	CSI:            "features.operators.openshift.io/csi",
}

// LegacyInfrastructureFeatures are the values the older operators.openshift.io/infrastructure-features
// annotation knows, for the features that have one. TLS profiles and short-lived cloud tokens
// came after that annotation and exist only as features.operators.openshift.io annotations.
var LegacyInfrastructureFeatures = map[InfrastructureFeature]string{
	Disconnected: "disconnected",
	ProxyAware:   "proxy-aware",
	FIPS:         "fips",
	CSI:          "csi",
}

// OwnedCRD is a CustomResourceDefinition the operator owns and ships in its bundle.
type OwnedCRD struct {
	// Name is <plural>.<group>.
	Name        string
	Version     string
	Kind        string
	DisplayName string
	Description string
	// Manifest is the generated CRD YAML.
	Manifest []byte
	// Example is the object shown in alm-examples; it must be valid against the CRD.
	Example runtime.Object
	// Internal marks a CRD only the operator writes: OperatorHub hides it
	// (operators.operatorframework.io/internal-objects) and it has no example, which would
	// invite users to create one.
	Internal bool
}

// Release is one version of an operator: one bundle.
type Release struct {
	// Version is the semantic version (without the "v").
	Version  string
	Channels []string
	// Replaces is the CSV name this release replaces.
	Replaces string
	// Skips lists CSV names this release can replace directly.
	Skips []string
	// SkipRange is the olm.skipRange: installed versions in it upgrade straight to this release.
	SkipRange string
	// Maturity is the CSV maturity (alpha, beta, preview, stable...).
	Maturity string
	// CreatedAt is the release date (RFC 3339); it is fixed so that bundles are reproducible.
	CreatedAt string
	// TechPreview marks a release whose description warns it is not supported for production.
	TechPreview bool
	// OpenShift is the OpenShift minor (4.11) the release is built for, as OpenShift's own
	// storage operators are: its bundle goes only into that minor's index, runs on that minor's
	// Kubernetes and the next minor's, and holds a cluster below the minor after next until the
	// operator is upgraded (MaxOpenShiftVersion). Its sidecar images carry the minor as their tag.
	// Empty for an operator not versioned with OpenShift (Operator.OpenShiftVersions).
	OpenShift string

	// OperatorImage is the operator's image: a release tag, which `csi-olm release` pins by digest.
	OperatorImage string
	// Images are the operand images, referenced like OperatorImage.
	Images []Image
}

// Image is an operand image the operator deploys.
type Image struct {
	// Name is the relatedImages name.
	Name string
	// Env is the environment variable of the operator Deployment that carries the image; empty
	// when the operator has the image built in (the community operator does).
	Env string
	// Ref is the image reference: a release tag, or a digest a registry served.
	Ref string
}

// Waiver explains a validator warning that is expected.
type Waiver struct {
	// Contains is a substring of the warning message.
	Contains string
	// Versions limits the waiver to these release versions; empty means every release.
	Versions []string
	// Reason says why the warning is accepted.
	Reason string
}

// CSVName is the CSV name of a release of the operator.
func (o *Operator) CSVName(version string) string {
	return fmt.Sprintf("%s.v%s", o.CSVPrefix, version)
}

// ImageEnv returns the environment variables that hand the operand images to the operator.
func (r Release) ImageEnv() []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, img := range r.Images {
		if img.Env != "" {
			env = append(env, corev1.EnvVar{Name: img.Env, Value: img.Ref})
		}
	}
	return env
}

// WaiverFor returns the reason a warning is expected for a release, or "" when it is not.
func (o *Operator) WaiverFor(version, warning string) string {
	for _, w := range o.Waivers {
		if w.Contains != "" && strings.Contains(warning, w.Contains) &&
			(len(w.Versions) == 0 || slices.Contains(w.Versions, version)) {
			return w.Reason
		}
	}
	return ""
}
