package crdschema_test

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/crdschema"
)

const twoVersions = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names:
    kind: Thing
    plural: things
  scope: Cluster
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        properties:
          metadata:
            type: object
          spec:
            type: object
        type: object
    served: true
    storage: false
  - name: v1
    schema:
      openAPIV3Schema:
        properties:
          spec:
            type: object
        type: object
    served: true
    storage: true
`

func TestRestrictNameSetsAnEnumInEveryVersion(t *testing.T) {
	out, err := crdschema.RestrictName([]byte(twoVersions), "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "---\napiVersion: apiextensions.k8s.io/v1\n") {
		t.Errorf("manifest does not start as controller-gen writes it:\n%s", out)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(out, &crd); err != nil {
		t.Fatalf("the result is no CRD: %v\n%s", err, out)
	}
	for _, v := range crd.Spec.Versions {
		props := v.Schema.OpenAPIV3Schema.Properties
		name := props["metadata"].Properties["name"]
		if props["metadata"].Type != "object" || name.Type != "string" || len(name.Enum) != 1 || string(name.Enum[0].Raw) != `"cluster"` {
			t.Errorf("version %s: metadata schema %+v", v.Name, props["metadata"])
		}
		if _, ok := props["spec"]; !ok {
			t.Errorf("version %s lost its spec", v.Name)
		}
	}
	if strings.Contains(string(out), "status:") || strings.Contains(string(out), "creationTimestamp") {
		t.Errorf("fields were added besides the name restriction:\n%s", out)
	}
}

func TestRestrictNameRefusesWhatItCannotComplete(t *testing.T) {
	for _, tt := range []struct {
		name     string
		manifest string
		names    []string
		want     string
	}{
		{"no names", twoVersions, nil, "no names to allow"},
		{"not YAML", "spec: [", []string{"cluster"}, "decoding the CRD"},
		{"no versions", "spec:\n  group: example.com\n", []string{"cluster"}, "no spec.versions"},
		{"a version without schema", "spec:\n  versions:\n  - name: v1\n", []string{"cluster"}, "spec.versions[0] has no schema properties"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := crdschema.RestrictName([]byte(tt.manifest), tt.names...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
