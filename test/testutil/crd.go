package testutil

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/csi-olm/csi-olm/testbed"
)

// WithoutValidationRules returns a copy of a CRD without its CEL rules (x-kubernetes-validations),
// as a Kubernetes API server older than 1.25 stores it: such a server does not know the field and
// drops it, so a test bed given this copy ignores the rules the way those clusters do.
func WithoutValidationRules(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd = crd.DeepCopy()
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil {
			dropValidationRules(s.OpenAPIV3Schema)
		}
	}
	return crd
}

func dropValidationRules(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.XValidations = nil
	for k, p := range s.Properties {
		dropValidationRules(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		dropValidationRules(s.Items.Schema)
		for i := range s.Items.JSONSchemas {
			dropValidationRules(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		dropValidationRules(s.AdditionalProperties.Schema)
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			dropValidationRules(&list[i])
		}
	}
	dropValidationRules(s.Not)
}

// CheckOnlyNameAllowed installs a CRD on a real API server, once with its CEL rules dropped (as
// Kubernetes before 1.25 does) and once as shipped, and checks each time that an object of the
// CRD's kind is refused under any name but the one allowed, and accepted under that one.
func CheckOnlyNameAllowed(t *testing.T, manifest []byte, name string) {
	t.Helper()
	shipped, err := testbed.DecodeCRD(manifest)
	if err != nil {
		t.Fatal(err)
	}
	s := StartTestBed(t, testbed.APIServer)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var served string
	for _, v := range shipped.Spec.Versions {
		if v.Storage {
			served = v.Name
		}
	}
	for _, tt := range []struct {
		what string
		crd  *apiextensionsv1.CustomResourceDefinition
	}{
		{"without CEL rules", WithoutValidationRules(shipped)},
		{"as shipped", shipped},
	} {
		if err := testbed.InstallCRDs(ctx, s.Client, tt.crd); err != nil {
			t.Fatal(err)
		}
		object := func(n string) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(shipped.Spec.Group + "/" + served)
			u.SetKind(shipped.Spec.Names.Kind)
			u.SetName(n)
			u.Object["spec"] = map[string]any{"managementState": "Managed"}
			return u
		}
		for _, other := range []string{"other", name + "-2", "x" + name} {
			err := s.Client.Create(ctx, object(other))
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`metadata.name: Unsupported value: %q`, other)) {
				t.Errorf("%s: creating %s %q: err = %v, want the name refused", tt.what, shipped.Spec.Names.Kind, other, err)
			}
		}
		good := object(name)
		if err := s.Client.Create(ctx, good); err != nil {
			t.Errorf("%s: creating %s %q: %v", tt.what, shipped.Spec.Names.Kind, name, err)
		} else if err := s.Client.Delete(ctx, good); err != nil {
			t.Fatal(err)
		}
	}
}
