package volumes

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
)

// specRule is what the shipped CRD allows in one spec field.
type specRule struct {
	pattern   *regexp.Regexp
	maxLength int64
}

// shippedSpecRules reads the spec fields' patterns and lengths from the CRD the bundle ships.
func shippedSpecRules(tb testing.TB) map[string]specRule {
	tb.Helper()
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(crd.SharedVolumes, &c); err != nil {
		tb.Fatal(err)
	}
	rules := map[string]specRule{}
	for name, p := range c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties {
		if p.Pattern == "" || p.MaxLength == nil {
			tb.Fatalf("the CRD's spec.%s has no pattern or maxLength: the fuzz target would admit what the API server refuses", name)
		}
		rules[name] = specRule{regexp.MustCompile(p.Pattern), *p.MaxLength}
	}
	if len(rules) != 2 {
		tb.Fatalf("the CRD's spec has %d fields, the fuzz target knows fileSystemID and accessPointID", len(rules))
	}
	return rules
}

// FuzzSharedVolumeMapping: for any SharedVolume the API server admits (its namespace a DNS label,
// its name a DNS subdomain, its spec as the shipped CRD allows), the controller either refuses
// the name with a message naming it, or maps it to a PV and a PVC the API server admits, owned
// by it, bound to each other, and recording exactly its spec. `make fuzz` runs it briefly.
func FuzzSharedVolumeMapping(f *testing.F) {
	rules := shippedSpecRules(f)
	f.Add("team-a", "data", "fs-0123abcd", "fsap-0123abcd")
	f.Add("a", strings.Repeat("n", 64), "fs-1", "fsap-1")
	f.Add("a-b", "c", "fs-01", "fsap-01")
	f.Add("x", "a.b", "fs-0", "fsap-0")
	f.Fuzz(func(t *testing.T, namespace, name, fsID, apID string) {
		sv := &sharedvolumev1alpha1.SharedVolume{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: fsID, AccessPointID: apID},
		}
		if len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return // the API server refuses the object
		}
		for field, value := range map[string]string{"fileSystemID": fsID, "accessPointID": apID} {
			if r := rules[field]; !r.pattern.MatchString(value) || int64(len(value)) > r.maxLength {
				return
			}
		}
		if why := NameProblem(sv); why != "" {
			if !strings.Contains(why, name) {
				t.Errorf("the refusal %q does not name the SharedVolume %s", why, name)
			}
			return
		}
		pv, pvc := PV(sv), PVC(sv)
		for _, n := range []string{pv.Name, pvc.Name} {
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				t.Errorf("%s/%s maps to the name %q, which the API server refuses: %v", namespace, name, n, errs)
			}
		}
		for _, labels := range []map[string]string{pv.Labels, pvc.Labels} {
			if errs := metav1validation.ValidateLabels(labels, field.NewPath("metadata", "labels")); len(errs) > 0 {
				t.Errorf("%s/%s maps to labels the API server refuses: %v", namespace, name, errs)
			}
		}
		if got, ok := RecordedSpec(pv); !ok || got != sv.Spec || !MountsSameAccessPoint(pv, sv) {
			t.Errorf("the PV of %s/%s records %+v (%v), not its spec %+v", namespace, name, got, ok, sv.Spec)
		}
		if !OwnedBy(pv, sv) || !OwnedBy(pvc, sv) {
			t.Errorf("the PV and PVC of %s/%s are not labelled as its own", namespace, name)
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != namespace || ref.Name != pvc.Name || pvc.Spec.VolumeName != pv.Name {
			t.Errorf("the PV %s and PVC %s/%s are not bound to each other", pv.Name, pvc.Namespace, pvc.Name)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Annotations: map[string]string{
			AllowedFileSystemsAnnotation: "fs-other, " + fsID, AllowedAccessPointsAnnotation: apID,
		}}}
		if ok, why := Allowed(ns, sv); !ok {
			t.Errorf("a namespace allowing exactly %s and %s refuses %s/%s: %s", fsID, apID, namespace, name, why)
		}
	})
}
