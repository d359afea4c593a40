// Package build turns operator definitions into OLM registry+v1 bundles: a CSV built from
// operator-framework/api types, the owned CRDs, metadata/annotations.yaml and bundle.Dockerfile.
package registryv1

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/pkg/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/definition"
)

// Bundle annotation keys (operator-registry's registry+v1 format).
const (
	MediaTypeAnnotation      = "operators.operatorframework.io.bundle.mediatype.v1"
	ManifestsAnnotation      = "operators.operatorframework.io.bundle.manifests.v1"
	MetadataAnnotation       = "operators.operatorframework.io.bundle.metadata.v1"
	PackageAnnotation        = "operators.operatorframework.io.bundle.package.v1"
	ChannelsAnnotation       = "operators.operatorframework.io.bundle.channels.v1"
	DefaultChannelAnnotation = "operators.operatorframework.io.bundle.channel.default.v1"
	OpenShiftVersionsLabel   = "com.redhat.openshift.versions"
	// MaxOpenShiftVersionProperty is the bundle property that caps the cluster's OpenShift minor.
	MaxOpenShiftVersionProperty = "olm.maxOpenShiftVersion"
)

// File names inside a bundle directory.
const (
	AnnotationsFile = "metadata/annotations.yaml"
	// PropertiesFile holds a bundle's own properties.
	PropertiesFile = "metadata/properties.yaml"
	DockerfileFile = "bundle.Dockerfile"
	ManifestsDir   = "manifests"
	MetadataDir    = "metadata"
)

// Bundle is one generated bundle, held in memory until every bundle has been built and checked.
type Bundle struct {
	Package string
	Version string
	CSVName string
	// Files maps paths relative to the bundle directory to their contents.
	Files map[string][]byte
}

// Dir is the bundle's directory relative to the bundle root: <package>/<version>.
func (b *Bundle) Dir() string { return path.Join(b.Package, b.Version) }

// All validates the definitions and builds every bundle. It returns every problem, and no bundle
// at all when there is one.
func All(operators []definition.Operator) ([]*Bundle, error) {
	if err := definition.Validate(operators); err != nil {
		return nil, err
	}
	var bundles []*Bundle
	var errs []error
	for i := range operators {
		for _, r := range operators[i].Releases {
			b, err := One(&operators[i], r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			bundles = append(bundles, b)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return bundles, nil
}

// One builds the bundle of one release of a (valid) operator definition.
func One(o *definition.Operator, r definition.Release) (*Bundle, error) {
	csvName := o.CSVName(r.Version)
	b := &Bundle{Package: o.Package, Version: r.Version, CSVName: csvName, Files: map[string][]byte{}}
	csv, err := CSV(o, r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", csvName, err)
	}
	if b.Files[path.Join(ManifestsDir, csvName+".clusterserviceversion.yaml")], err = manifestYAML(csv); err != nil {
		return nil, fmt.Errorf("%s: %w", csvName, err)
	}
	for _, crd := range o.OwnedCRDs {
		b.Files[path.Join(ManifestsDir, crdFileName(crd.Name))] = crd.Manifest
	}
	for _, obj := range o.Manifests {
		name, err := manifestFileName(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", csvName, err)
		}
		if b.Files[path.Join(ManifestsDir, name)], err = manifestYAML(obj); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", csvName, name, err)
		}
	}
	annotations := bundleAnnotations(o, r)
	if b.Files[AnnotationsFile], err = yaml.Marshal(map[string]any{"annotations": annotations}); err != nil {
		return nil, fmt.Errorf("%s: encoding annotations: %w", csvName, err)
	}
	if max := r.MaxOpenShiftVersion(); max != "" {
		// Where operator-registry reads a bundle's own properties (the CSV's olm.properties
		// annotation is deprecated): opm renders them into the catalog, and OLM projects them
		// onto the installed CSV.
		value, err := json.Marshal(max)
		if err != nil {
			return nil, err
		}
		props := registry.PropertiesFile{Properties: []registry.Property{{Type: MaxOpenShiftVersionProperty, Value: value}}}
		if b.Files[PropertiesFile], err = yaml.Marshal(props); err != nil {
			return nil, fmt.Errorf("%s: encoding properties: %w", csvName, err)
		}
	}
	b.Files[DockerfileFile] = dockerfile(annotations)
	return b, nil
}

// manifestFileName follows operator-sdk's naming: <name>_<group>_<version>_<kind>.yaml, the
// group left out for the core API.
func manifestFileName(obj runtime.Object) (string, error) {
	meta, err := apimeta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("a bundle manifest %T has no metadata: %w", obj, err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if meta.GetName() == "" || gvk.Kind == "" {
		return "", fmt.Errorf("a bundle manifest %T needs a name and a kind", obj)
	}
	parts := []string{meta.GetName(), gvk.Group, gvk.Version, strings.ToLower(gvk.Kind)}
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "_") + ".yaml", nil
}

// crdFileName follows controller-gen's naming: <group>_<plural>.yaml.
func crdFileName(name string) string {
	plural, group, _ := strings.Cut(name, ".")
	return group + "_" + plural + ".yaml"
}

// bundleDefaultChannel is the default channel a release's annotations declare: the package
// default when the release is in it, else the release's first channel (a bundle's default
// channel must be one of its own channels).
func bundleDefaultChannel(o *definition.Operator, r definition.Release) string {
	if slices.Contains(r.Channels, o.DefaultChannel) {
		return o.DefaultChannel
	}
	return r.Channels[0]
}

func bundleAnnotations(o *definition.Operator, r definition.Release) map[string]string {
	a := map[string]string{
		MediaTypeAnnotation:      "registry+v1",
		ManifestsAnnotation:      ManifestsDir + "/",
		MetadataAnnotation:       "metadata/",
		PackageAnnotation:        o.Package,
		ChannelsAnnotation:       strings.Join(r.Channels, ","),
		DefaultChannelAnnotation: bundleDefaultChannel(o, r),
	}
	if versions := o.OpenShiftVersionsOf(r); versions != "" {
		a[OpenShiftVersionsLabel] = versions
	}
	return a
}

// dockerfile writes the bundle image's Dockerfile with the same labels as annotations.yaml, as
// `opm alpha bundle generate` does, so that the image and the directory describe one bundle.
func dockerfile(annotations map[string]string) []byte {
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString("FROM scratch\n\n")
	for _, k := range keys {
		fmt.Fprintf(&sb, "LABEL %s=%s\n", k, annotations[k])
	}
	sb.WriteString("\nCOPY " + ManifestsDir + " /manifests/\nCOPY metadata /metadata/\n")
	return []byte(sb.String())
}

// CSV builds the ClusterServiceVersion of a release.
func CSV(o *definition.Operator, r definition.Release) (*v1alpha1.ClusterServiceVersion, error) {
	examples, err := almExamples(o.OwnedCRDs)
	if err != nil {
		return nil, err
	}
	features, err := json.Marshal(legacyFeatureNames(o.InfrastructureFeatures))
	if err != nil {
		return nil, err
	}
	annotations := map[string]string{
		"alm-examples":   examples,
		"capabilities":   o.Capabilities,
		"categories":     strings.Join(o.Categories, ","),
		"containerImage": r.OperatorImage,
		"createdAt":      r.CreatedAt,
		"description":    o.Summary,
		"repository":     o.Repository,
		"support":        o.Support,
		"operators.openshift.io/infrastructure-features": string(features),
		"operatorframework.io/suggested-namespace":       o.SuggestedNamespace,
	}
	for f, key := range definition.FeatureAnnotations {
		annotations[key] = fmt.Sprint(slices.Contains(o.InfrastructureFeatures, f))
	}
	if r.SkipRange != "" {
		annotations["olm.skipRange"] = r.SkipRange
	}

	if o.ClusterMonitoring {
		annotations["operatorframework.io/cluster-monitoring"] = "true"
	}
	var internal []string
	for _, c := range o.OwnedCRDs {
		if c.Internal {
			internal = append(internal, c.Name)
		}
	}
	if len(internal) > 0 {
		raw, err := json.Marshal(internal)
		if err != nil {
			return nil, fmt.Errorf("encoding the internal objects: %w", err)
		}
		annotations["operators.operatorframework.io/internal-objects"] = string(raw)
	}
	if o.InitializationResource != nil {
		m, err := manifestMap(o.InitializationResource)
		if err != nil {
			return nil, fmt.Errorf("initialization resource: %w", err)
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encoding the initialization resource: %w", err)
		}
		annotations["operatorframework.io/initialization-resource"] = string(raw)
	}
	labels := map[string]string{"operatorframework.io/os.linux": "supported"}
	for _, arch := range o.Architectures {
		labels["operatorframework.io/arch."+arch] = "supported"
	}

	description := o.Description
	if r.TechPreview {
		description = "**Technology Preview:** this release is not supported for production use.\n\n" + description
	}
	csv := &v1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        o.CSVName(r.Version),
			Annotations: annotations,
			Labels:      labels,
		},
		Spec: v1alpha1.ClusterServiceVersionSpec{
			DisplayName:    o.DisplayName,
			Description:    description,
			Keywords:       o.Keywords,
			Maintainers:    o.Maintainers,
			Provider:       o.Provider,
			Links:          o.Links,
			Icon:           []v1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(o.IconSVG), MediaType: "image/svg+xml"}},
			Version:        version.OperatorVersion{Version: semver.MustParse(r.Version)},
			Maturity:       r.Maturity,
			Replaces:       r.Replaces,
			Skips:          r.Skips,
			MinKubeVersion: o.MinKubeVersionOf(r),
			InstallModes:   installModes(o.InstallModes),
			NativeAPIs:     o.NativeAPIs,
			CustomResourceDefinitions: v1alpha1.CustomResourceDefinitions{
				Owned: ownedCRDs(o.OwnedCRDs),
			},
			InstallStrategy: v1alpha1.NamedInstallStrategy{
				StrategyName: v1alpha1.InstallStrategyNameDeployment,
				StrategySpec: v1alpha1.StrategyDetailsDeployment{
					DeploymentSpecs:    []v1alpha1.StrategyDeploymentSpec{{Name: o.DeploymentName, Spec: o.Deployment(r)}},
					ClusterPermissions: permissions(o.ServiceAccount, o.ClusterRules),
					Permissions:        permissions(o.ServiceAccount, o.NamespaceRules),
				},
			},
			RelatedImages: relatedImages(o, r),
		},
	}
	return csv, nil
}

// legacyFeatureNames lists the features the legacy annotation knows; OperatorHub rejects others there.
func legacyFeatureNames(features []definition.InfrastructureFeature) []string {
	names := make([]string, 0, len(features))
	for _, f := range features {
		if legacy, ok := definition.LegacyInfrastructureFeatures[f]; ok {
			names = append(names, legacy)
		}
	}
	return names
}

// installModes declares every install mode, marking only the supported ones, so OperatorHub
// shows plainly which modes the operator refuses.
func installModes(supported []v1alpha1.InstallModeType) []v1alpha1.InstallMode {
	var modes []v1alpha1.InstallMode
	for _, t := range []v1alpha1.InstallModeType{
		v1alpha1.InstallModeTypeOwnNamespace, v1alpha1.InstallModeTypeSingleNamespace,
		v1alpha1.InstallModeTypeMultiNamespace, v1alpha1.InstallModeTypeAllNamespaces,
	} {
		modes = append(modes, v1alpha1.InstallMode{Type: t, Supported: slices.Contains(supported, t)})
	}
	return modes
}

func ownedCRDs(crds []definition.OwnedCRD) []v1alpha1.CRDDescription {
	var owned []v1alpha1.CRDDescription
	for _, c := range crds {
		owned = append(owned, v1alpha1.CRDDescription{
			Name: c.Name, Version: c.Version, Kind: c.Kind, DisplayName: c.DisplayName, Description: c.Description,
		})
	}
	return owned
}

func permissions(serviceAccount string, rules []rbacv1.PolicyRule) []v1alpha1.StrategyDeploymentPermissions {
	if len(rules) == 0 {
		return nil
	}
	return []v1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: serviceAccount, Rules: rules}}
}

func relatedImages(o *definition.Operator, r definition.Release) []v1alpha1.RelatedImage {
	images := []v1alpha1.RelatedImage{{Name: o.DeploymentName, Image: r.OperatorImage}}
	for _, img := range r.Images {
		images = append(images, v1alpha1.RelatedImage{Name: img.Name, Image: img.Ref})
	}
	return images
}

func almExamples(crds []definition.OwnedCRD) (string, error) {
	examples := make([]map[string]any, 0, len(crds))
	for _, c := range crds {
		if c.Internal {
			continue
		}
		m, err := manifestMap(c.Example)
		if err != nil {
			return "", fmt.Errorf("example of %s: %w", c.Name, err)
		}
		examples = append(examples, m)
	}
	raw, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding alm-examples: %w", err)
	}
	return string(raw), nil
}
