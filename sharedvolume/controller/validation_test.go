package controller_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// TestSchemaRejectsBadSharedVolumes sends malformed SharedVolumes to the real API server, which
// validates them with the generated CRD: each is refused with a message naming the field.
func TestSchemaRejectsBadSharedVolumes(t *testing.T) {
	b := newBed(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.namespace(ctx, "team-a", nil)
	tests := []struct {
		name string
		spec string // JSON of spec; "-" for no spec at all
		want []string
	}{
		{"no spec", "-", []string{"spec: Required value"}},
		{"empty spec", `{}`, []string{"spec.accessPointID: Required value", "spec.fileSystemID: Required value"}},
		{"no fileSystemID", `{"accessPointID":"fsap-01"}`, []string{"spec.fileSystemID: Required value"}},
		{"no accessPointID", `{"fileSystemID":"fs-01"}`, []string{"spec.accessPointID: Required value"}},
		{"empty fileSystemID", `{"fileSystemID":"","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", `should match '^fs-[0-9a-f]+$'`}},
		{"empty accessPointID", `{"fileSystemID":"fs-01","accessPointID":""}`, []string{"spec.accessPointID", `should match '^fsap-[0-9a-f]+$'`}},
		{"fileSystemID without prefix", `{"fileSystemID":"0123abcd","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "should match"}},
		{"uppercase fileSystemID", `{"fileSystemID":"fs-0123ABCD","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "should match"}},
		{"fileSystemID with a space", `{"fileSystemID":"fs-01 23","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "should match"}},
		{"fileSystemID given as an ARN", `{"fileSystemID":"arn:aws:elasticfilesystem:us-east-1:123:file-system/fs-01","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "should match"}},
		{"access point ID as fileSystemID", `{"fileSystemID":"fsap-01","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "should match"}},
		{"fileSystemID with only the prefix", `{"fileSystemID":"fs-","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "should match"}},
		{"fileSystemID with a trailing newline", `{"fileSystemID":"fs-01\n","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "should match"}},
		{"fileSystemID too long", `{"fileSystemID":"fs-` + strings.Repeat("0", 70) + `","accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "Too long"}},
		{"fileSystemID as a number", `{"fileSystemID":1234,"accessPointID":"fsap-01"}`, []string{"spec.fileSystemID", "must be of type string"}},
		{"accessPointID without prefix", `{"fileSystemID":"fs-01","accessPointID":"0123abcd"}`, []string{"spec.accessPointID", "should match"}},
		{"uppercase accessPointID", `{"fileSystemID":"fs-01","accessPointID":"fsap-0123ABCD"}`, []string{"spec.accessPointID", "should match"}},
		{"file system ID as accessPointID", `{"fileSystemID":"fs-01","accessPointID":"fs-01"}`, []string{"spec.accessPointID", "should match"}},
		{"accessPointID with a slash", `{"fileSystemID":"fs-01","accessPointID":"fsap-01/../x"}`, []string{"spec.accessPointID", "should match"}},
		{"accessPointID too long", `{"fileSystemID":"fs-01","accessPointID":"fsap-` + strings.Repeat("a", 70) + `"}`, []string{"spec.accessPointID", "Too long"}},
		{"accessPointID as a list", `{"fileSystemID":"fs-01","accessPointID":["fsap-01"]}`, []string{"spec.accessPointID", "must be of type string"}},
		{"spec as a string", `"fs-01::fsap-01"`, []string{"spec", "must be of type object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.Kind,
				"metadata": map[string]any{"namespace": "team-a", "name": "bad"},
			}}
			if tt.spec != "-" {
				var spec any
				must(t, json.Unmarshal([]byte(tt.spec), &spec))
				obj.Object["spec"] = spec
			}
			err := b.c.Create(ctx, obj)
			if err == nil {
				t.Fatal("the API server accepted it")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
	// Status is validated too: an unknown phase is refused.
	v := sv("team-a", "good", "fs-01", "fsap-01")
	must(t, b.c.Create(ctx, v))
	v.Status.Phase = "Mounted"
	if err := b.c.Status().Update(ctx, v); err == nil || !strings.Contains(err.Error(), `status.phase: Unsupported value: "Mounted"`) {
		t.Errorf("status with an unknown phase: err = %v", err)
	}
}
