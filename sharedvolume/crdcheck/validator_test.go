package crdcheck_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	communityefsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/communityefs/v1alpha1"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
	"github.com/csi-olm/csi-olm/sharedvolume/crdcheck"
	"github.com/csi-olm/csi-olm/test/clustercorpus"
)

const (
	// longFileSystemID and longAccessPointID match the community patterns and are one character
	// over the certified maxLength.
	longFileSystemID  = "fs-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
	longAccessPointID = "fsap-0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
)

// communitySharedVolume is a SharedVolume as the community operator leaves it once Ready: its
// status written from the community Go types (whose claimRef is never omitted).
func communitySharedVolume(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	sv := &communityefsv1alpha1.SharedVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: sharedvolumev1alpha1.GroupVersion.String(), Kind: sharedvolumev1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", Finalizers: []string{efs.SharedVolumeFinalizer}},
		Spec:       communityefsv1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123cdef", AccessPointID: "fsap-0123456789abcdef"},
		Status: communityefsv1alpha1.SharedVolumeStatus{
			Phase:    "Ready",
			ClaimRef: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: efs.SharedVolumePVC("data")},
		},
	}
	return toUnstructured(t, sv)
}

// certifiedSharedVolume is one the certified controller wrote, with its conditions.
func certifiedSharedVolume(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	sv := &sharedvolumev1alpha1.SharedVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: sharedvolumev1alpha1.GroupVersion.String(), Kind: sharedvolumev1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"},
		Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123cdef", AccessPointID: "fsap-0123456789abcdef"},
		Status: sharedvolumev1alpha1.SharedVolumeStatus{
			Phase:    sharedvolumev1alpha1.SharedVolumeReady,
			ClaimRef: &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: efs.SharedVolumePVC("data")},
		},
	}
	meta.SetStatusCondition(&sv.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Bound", Message: "the claim is bound"})
	return toUnstructured(t, sv)
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

func set(t *testing.T, u *unstructured.Unstructured, value any, path ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(u.Object, value, path...); err != nil {
		t.Fatal(err)
	}
}

func certifiedValidator(t *testing.T) *crdcheck.Validator {
	t.Helper()
	v, err := crdcheck.NewValidator(crd.SharedVolumes)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestValidateAgainstTheCertifiedCRD names every problem with its field path, in path order.
func TestValidateAgainstTheCertifiedCRD(t *testing.T) {
	v := certifiedValidator(t)
	if got := v.Versions(); !slices.Equal(got, []string{"v1alpha1"}) {
		t.Errorf("versions = %v", got)
	}
	for _, tc := range []struct {
		name string
		base func(*testing.T) *unstructured.Unstructured
		edit func(*testing.T, *unstructured.Unstructured)
		want []string
	}{
		{name: "a Ready community SharedVolume", base: communitySharedVolume, edit: func(*testing.T, *unstructured.Unstructured) {}},
		{name: "a Ready certified SharedVolume", base: certifiedSharedVolume, edit: func(*testing.T, *unstructured.Unstructured) {}},
		{
			name: "a community SharedVolume not reconciled yet",
			base: communitySharedVolume,
			edit: func(_ *testing.T, u *unstructured.Unstructured) { delete(u.Object, "status") },
		},
		{
			// The server prunes a field its schema does not know when it reads the object: no
			// write ever carries it.
			name: "a field the schema does not know",
			base: communitySharedVolume,
			edit: func(t *testing.T, u *unstructured.Unstructured) { set(t, u, "x", "spec", "region") },
		},
		{
			name: "spec missing",
			base: communitySharedVolume,
			edit: func(_ *testing.T, u *unstructured.Unstructured) { delete(u.Object, "spec") },
			want: []string{"spec: Required value"},
		},
		{
			name: "a fileSystemID of 65 characters",
			base: communitySharedVolume,
			edit: func(t *testing.T, u *unstructured.Unstructured) { set(t, u, longFileSystemID, "spec", "fileSystemID") },
			want: []string{"spec.fileSystemID: Too long: may not be more than 64 bytes"},
		},
		{
			name: "status.phase Bogus",
			base: communitySharedVolume,
			edit: func(t *testing.T, u *unstructured.Unstructured) { set(t, u, "Bogus", "status", "phase") },
			want: []string{`status.phase: Unsupported value: "Bogus": supported values: "Pending", "Ready", "Deleting", "Failed"`},
		},
		{
			name: "an accessPointID of the wrong type",
			base: communitySharedVolume,
			edit: func(t *testing.T, u *unstructured.Unstructured) { set(t, u, int64(42), "spec", "accessPointID") },
			want: []string{`spec.accessPointID: Invalid value: "integer": spec.accessPointID in body must be of type string: "integer"`},
		},
		{
			name: "several problems",
			base: communitySharedVolume,
			edit: func(t *testing.T, u *unstructured.Unstructured) {
				set(t, u, longFileSystemID, "spec", "fileSystemID")
				set(t, u, longAccessPointID, "spec", "accessPointID")
				set(t, u, "Mounted", "status", "phase")
				unstructured.RemoveNestedField(u.Object, "status", "claimRef", "name")
			},
			want: []string{
				"spec.accessPointID: Too long: may not be more than 64 bytes",
				"spec.fileSystemID: Too long: may not be more than 64 bytes",
				"status.claimRef.name: Required value",
				`status.phase: Unsupported value: "Mounted": supported values: "Pending", "Ready", "Deleting", "Failed"`,
			},
		},
		{
			name: "two conditions of one type",
			base: certifiedSharedVolume,
			edit: func(t *testing.T, u *unstructured.Unstructured) {
				conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				if err := unstructured.SetNestedSlice(u.Object, append(conditions, conditions[0]), "status", "conditions"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{`status.conditions[1]: Duplicate value: {"type":"Ready"}`},
		},
		{
			name: "a version the CRD does not serve",
			base: communitySharedVolume,
			edit: func(_ *testing.T, u *unstructured.Unstructured) {
				u.SetAPIVersion("aws-efs.managed.openshift.io/v1beta1")
			},
			want: []string{`apiVersion: Unsupported value: "aws-efs.managed.openshift.io/v1beta1": supported values: "aws-efs.managed.openshift.io/v1alpha1"`},
		},
		{
			name: "another kind",
			base: communitySharedVolume,
			edit: func(_ *testing.T, u *unstructured.Unstructured) { u.SetKind("SharedVolumeClaim") },
			want: []string{`kind: Invalid value: "SharedVolumeClaim": must be SharedVolume`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.base(t)
			tc.edit(t, u)
			before := u.DeepCopy()
			got := v.Validate(u)
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if !sameJSON(before, u) {
				t.Error("Validate changed the object")
			}
		})
	}
}

func sameJSON(a, b *unstructured.Unstructured) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return string(ja) == string(jb)
}

// TestValidateEvaluatesTheRulesAsAnUnchangedUpdate: the rules run, and a transition rule sees
// oldSelf equal to self. The shipped CRD's only rule is a transition rule, which then always
// holds, so a rule that reads self alone is added to a copy of it.
func TestValidateEvaluatesTheRulesAsAnUnchangedUpdate(t *testing.T) {
	svCRD := decodeCRD(t, crd.SharedVolumes)
	spec := svCRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if len(spec.XValidations) != 1 || spec.XValidations[0].Rule != "self == oldSelf" {
		t.Fatalf("the shipped spec rules changed: %+v", spec.XValidations)
	}
	spec.XValidations = append(spec.XValidations, apiextensionsv1.ValidationRule{
		Rule: "!self.fileSystemID.startsWith('fs-dead')", Message: "that file system was retired",
	})
	svCRD.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	manifest, err := yaml.Marshal(svCRD)
	if err != nil {
		t.Fatal(err)
	}
	v, err := crdcheck.NewValidator(manifest)
	if err != nil {
		t.Fatal(err)
	}
	u := communitySharedVolume(t)
	if got := v.Validate(u); len(got) > 0 {
		t.Errorf("a valid SharedVolume: %v", got)
	}
	set(t, u, "fs-deadbeef", "spec", "fileSystemID")
	if got, want := v.Validate(u), []string{"spec: Invalid value: that file system was retired"}; !slices.Equal(got, want) {
		t.Errorf("problems %q, want %q", got, want)
	}
}

// TestValidateAgreesWithTheAPIServerCorpus runs the SharedVolume cases of the bad-input corpus
// (test/badinput/sharedvolume), whose want lines are what a real API server with the certified
// CRD says: every create the schema refuses there is reported here with those lines, and every
// create it accepts is valid here.
func TestValidateAgreesWithTheAPIServerCorpus(t *testing.T) {
	v := certifiedValidator(t)
	example, err := clustercorpus.ShippedExample("../..", "aws-efs-operator", sharedvolumev1alpha1.Kind)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := clustercorpus.Load("../../test/badinput/sharedvolume", func(name string) string { return "sv-" + name })
	if err != nil {
		t.Fatal(err)
	}
	refused, accepted := 0, 0
	for name, c := range cases {
		if c.Create == nil {
			continue
		}
		obj, err := c.Create.Build(example)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if obj.GetKind() != sharedvolumev1alpha1.Kind {
			continue
		}
		createRefused := len(c.Want.Error) > 0 && !slices.ContainsFunc(c.Steps, func(s clustercorpus.Step) bool { return s.Refused })
		// Names and namespaces are the API server's to check, not the CRD's, and every object
		// in a cluster already passed them.
		if createRefused && !strings.HasPrefix(c.Want.Error[0], "spec") {
			continue
		}
		problems := strings.Join(v.Validate(obj), "\n")
		if !createRefused {
			accepted++
			if problems != "" {
				t.Errorf("%s: the API server accepts it, the check says:\n%s", name, problems)
			}
			continue
		}
		refused++
		for _, want := range c.Want.Error {
			if !strings.Contains(problems, want) {
				t.Errorf("%s: the API server says %q, the check says:\n%s", name, want, problems)
			}
		}
	}
	if refused < 20 || accepted < 10 {
		t.Errorf("only %d refused and %d accepted cases ran: has the corpus moved?", refused, accepted)
	}
	t.Logf("%d cases the API server refuses, %d it accepts", refused, accepted)
}

func decodeCRD(t *testing.T, manifest []byte) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(manifest, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func TestNewValidatorRefusesWhatIsNoCRD(t *testing.T) {
	for _, tc := range []struct {
		manifest, want string
	}{
		{"kind: ConfigMap\nmetadata: {name: x}\n", `not a CustomResourceDefinition (kind "ConfigMap", name "x")`},
		{"kind: CustomResourceDefinition\nspec: {versions: 3}\n", "decoding the CRD: "},
		{`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: xs.example.com}
spec:
  group: example.com
  names: {kind: X, plural: xs}
  scope: Namespaced
  versions: [{name: v1, served: false, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`, "CRD xs.example.com serves no version"},
	} {
		if _, err := crdcheck.NewValidator([]byte(tc.manifest)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.manifest, err, tc.want)
		}
	}
}
