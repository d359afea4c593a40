package definition

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// KubeCompatAnnotationPrefix starts the CRD annotations that say, for one place of a CRD, how
// what the CRD declares there holds on a Kubernetes API server too old to know it: such a server
// drops the fields it does not know from the CRD it stores, silently. The rest of the key is the
// place: `self` for the object and its properties joined by dots (`self.spec.fileSystemID`), with
// `items` for the elements of an array and `additionalProperties` for the values of a map; or
// `versions.<version>.<field>` for a field of a CRD version. The value is the explanation, for
// the reviewers of the bundle and for the admins of the clusters that install it. A bundle whose
// minKubeVersion is older than a feature of its CRDs is invalid unless the CRD has one.
const KubeCompatAnnotationPrefix = "kube-compat.csi-olm.io/"

// crdFeature is a CRD field that Kubernetes API servers older than since do not apply by
// default: they do not know it, or keep it off behind an alpha feature gate.
type crdFeature struct {
	field string
	since semver.Version
	// lost says what such a server does instead.
	lost string
}

// The CRD features newer than apiextensions.k8s.io/v1 itself (Kubernetes 1.16), with the first
// Kubernetes version whose API server applies them by default.
var (
	featureMapType = crdFeature{"x-kubernetes-map-type", semver.MustParse("1.17.0"),
		"server-side apply merges the map key by key instead of as a whole"}
	featureDeprecation = crdFeature{"deprecated/deprecationWarning", semver.MustParse("1.19.0"),
		"clients get no deprecation warning"}
	// Alpha behind CustomResourceValidationExpressions in 1.23 and 1.24, beta and on from 1.25.
	featureRules = crdFeature{"x-kubernetes-validations", semver.MustParse("1.25.0"),
		"it accepts what the rule refuses"}
	featureMessageExpression = crdFeature{"messageExpression", semver.MustParse("1.27.0"),
		"a refusal gives the rule's message, or a generic one"}
	featureReason = crdFeature{"reason", semver.MustParse("1.28.0"),
		"a refusal has the reason FieldValueInvalid"}
	featureFieldPath = crdFeature{"fieldPath", semver.MustParse("1.28.0"),
		"a refusal names the place of the rule, not the field"}
	// Alpha behind CRDValidationRatcheting in 1.28 and 1.29, beta and on from 1.30.
	featureOptionalOldSelf = crdFeature{"optionalOldSelf", semver.MustParse("1.30.0"),
		"oldSelf is not optional: the rule runs on updates only, or the CRD is refused"}
	// Alpha behind CustomResourceFieldSelectors in 1.30, beta and on from 1.31.
	featureSelectableFields = crdFeature{"selectableFields", semver.MustParse("1.31.0"),
		"field selectors on these fields are refused"}
)

// crdV1Since is the first Kubernetes version that serves apiextensions.k8s.io/v1 CRDs.
var crdV1Since = semver.MustParse("1.16.0")

// crdUse is one use of a feature in a CRD.
type crdUse struct {
	version string
	// place is the key the kube-compat annotation gives it (see KubeCompatAnnotationPrefix).
	place   string
	feature crdFeature
	// detail names the use when the place has several, such as the rule's text.
	detail string
}

// checkCRDKubeVersions reports each use of a CRD feature that the lowest minKubeVersion of the
// operator's releases lacks and no kube-compat annotation of the CRD explains, and each
// kube-compat annotation that is empty or names a place that uses no such feature.
func (v *validator) checkCRDKubeVersions(where string, o *Operator) {
	var minKube semver.Version
	for i, r := range o.Releases {
		k, err := semver.Parse(o.MinKubeVersionOf(r))
		if err != nil {
			return // reported by checkOpenShift
		}
		if i == 0 || k.LT(minKube) {
			minKube = k
		}
	}
	if len(o.Releases) == 0 {
		return
	}
	for _, owned := range o.OwnedCRDs {
		var crd apiextensionsv1.CustomResourceDefinition
		if len(owned.Manifest) == 0 || yaml.UnmarshalStrict(owned.Manifest, &crd) != nil {
			continue // reported by checkOwnedCRDs
		}
		at := fmt.Sprintf("owned CRD %q", owned.Name)
		if crd.APIVersion == apiextensionsv1.SchemeGroupVersion.String() && minKube.LT(crdV1Since) {
			v.addf(where, "%s is an %s CRD, which Kubernetes before %s cannot create, but minKubeVersion is %s: raise minKubeVersion to %s",
				at, crd.APIVersion, crdV1Since, minKube, crdV1Since)
		}
		uses := crdUses(&crd)
		places := map[string]bool{}
		for _, u := range uses {
			places[u.place] = true
			if !minKube.LT(u.feature.since) {
				continue
			}
			if strings.TrimSpace(crd.Annotations[KubeCompatAnnotationPrefix+u.place]) != "" {
				continue
			}
			what := u.feature.field
			if u.detail != "" {
				what += " " + u.detail
			}
			v.addf(where, "%s %s at %s: %s needs Kubernetes %s, but minKubeVersion is %s, and an older API server drops it: %s. Raise minKubeVersion to %s, or say how this holds there in the CRD annotation %s%s",
				at, u.version, u.place, what, u.feature.since, minKube, u.feature.lost, u.feature.since, KubeCompatAnnotationPrefix, u.place)
		}
		for _, key := range slices.Sorted(maps.Keys(crd.Annotations)) {
			place, ok := strings.CutPrefix(key, KubeCompatAnnotationPrefix)
			if !ok {
				continue
			}
			switch {
			case !places[place]:
				v.addf(where, "%s: annotation %s names %q, where the CRD uses no feature newer than apiextensions.k8s.io/v1 (Kubernetes %s): fix the place or remove the annotation",
					at, key, place, crdV1Since)
			case strings.TrimSpace(crd.Annotations[key]) == "":
				v.addf(where, "%s: annotation %s is empty: say how what the CRD declares at %s holds on an API server that drops it", at, key, place)
			}
		}
	}
}

// crdUses lists the uses of CRD features newer than apiextensions.k8s.io/v1, version by version.
func crdUses(crd *apiextensionsv1.CustomResourceDefinition) []crdUse {
	var uses []crdUse
	for _, ver := range crd.Spec.Versions {
		if ver.Deprecated || ver.DeprecationWarning != nil {
			uses = append(uses, crdUse{ver.Name, "versions." + ver.Name + ".deprecationWarning", featureDeprecation, ""})
		}
		if len(ver.SelectableFields) > 0 {
			uses = append(uses, crdUse{ver.Name, "versions." + ver.Name + ".selectableFields", featureSelectableFields, ""})
		}
		if ver.Schema != nil {
			uses = schemaUses(uses, ver.Name, "self", ver.Schema.OpenAPIV3Schema)
		}
	}
	return uses
}

func schemaUses(uses []crdUse, version, place string, s *apiextensionsv1.JSONSchemaProps) []crdUse {
	if s == nil {
		return uses
	}
	for _, rule := range s.XValidations {
		detail := fmt.Sprintf("rule %q", rule.Rule)
		uses = append(uses, crdUse{version, place, featureRules, detail})
		for _, f := range []struct {
			used    bool
			feature crdFeature
		}{
			{rule.MessageExpression != "", featureMessageExpression},
			{rule.Reason != nil, featureReason},
			{rule.FieldPath != "", featureFieldPath},
			{rule.OptionalOldSelf != nil, featureOptionalOldSelf},
		} {
			if f.used {
				uses = append(uses, crdUse{version, place, f.feature, "of " + detail})
			}
		}
	}
	if s.XMapType != nil {
		uses = append(uses, crdUse{version, place, featureMapType, fmt.Sprintf("%q", *s.XMapType)})
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		uses = schemaUses(uses, version, place+"."+name, &p)
	}
	if s.Items != nil {
		uses = schemaUses(uses, version, place+".items", s.Items.Schema)
	}
	if s.AdditionalProperties != nil {
		uses = schemaUses(uses, version, place+".additionalProperties", s.AdditionalProperties.Schema)
	}
	return uses
}
