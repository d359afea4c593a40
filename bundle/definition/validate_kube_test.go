package definition_test

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
)

// editCRD changes the first owned CRD of an operator.
func editCRD(t *testing.T, o *definition.Operator, edit func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(o.OwnedCRDs[0].Manifest, &crd); err != nil {
		t.Fatal(err)
	}
	edit(&crd)
	out, err := yaml.Marshal(&crd)
	if err != nil {
		t.Fatal(err)
	}
	o.OwnedCRDs[0].Manifest = out
}

// editSchema changes the schema of the CRD's first version at a path of properties; "items"
// steps into the elements of an array.
func editSchema(crd *apiextensionsv1.CustomResourceDefinition, path string, edit func(*apiextensionsv1.JSONSchemaProps)) {
	var at func(s *apiextensionsv1.JSONSchemaProps, path []string)
	at = func(s *apiextensionsv1.JSONSchemaProps, path []string) {
		switch {
		case len(path) == 0:
			edit(s)
		case path[0] == "items":
			at(s.Items.Schema, path[1:])
		default:
			p := s.Properties[path[0]]
			at(&p, path[1:])
			s.Properties[path[0]] = p
		}
	}
	var steps []string
	if path != "" {
		steps = strings.Split(path, ".")
	}
	at(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, steps)
}

func addRule(rule apiextensionsv1.ValidationRule) func(*apiextensionsv1.JSONSchemaProps) {
	return func(s *apiextensionsv1.JSONSchemaProps) { s.XValidations = append(s.XValidations, rule) }
}

const compat = definition.KubeCompatAnnotationPrefix

// TestValidateChecksWhatCRDsNeedOfKubernetes: a bundle whose CRDs use a feature its
// minKubeVersion lacks is invalid, unless the CRD says in a kube-compat annotation how what the
// feature declares holds there; each problem names the operator, the CRD, its version and place.
func TestValidateChecksWhatCRDsNeedOfKubernetes(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, ops []definition.Operator)
		want   []string // every substring must appear in the error
	}{
		{
			name: "immutability rule without its annotation",
			mutate: func(t *testing.T, ops []definition.Operator) {
				editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					delete(crd.Annotations, compat+"self.spec")
				})
			},
			want: []string{
				`aws-efs-csi-driver-operator: owned CRD "sharedvolumes.aws-efs.managed.openshift.io" v1alpha1 at self.spec: x-kubernetes-validations rule "self == oldSelf" needs Kubernetes 1.25.0, but minKubeVersion is 1.22.0`,
				"it accepts what the rule refuses",
				"Raise minKubeVersion to 1.25.0, or say how this holds there in the CRD annotation kube-compat.csi-olm.io/self.spec",
			},
		},
		{
			name: "CEL rule on the name of the 4.5 singleton",
			mutate: func(t *testing.T, ops []definition.Operator) {
				editCRD(t, &ops[ebs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					editSchema(crd, "", addRule(apiextensionsv1.ValidationRule{Rule: "self.metadata.name == 'cluster'"}))
				})
			},
			want: []string{`aws-ebs-csi-driver-operator: owned CRD "awsebsdrivers.csi.openshift.io" v1alpha1 at self: x-kubernetes-validations rule "self.metadata.name == 'cluster'" needs Kubernetes 1.25.0, but minKubeVersion is 1.17.0`},
		},
		{
			name: "rule on the elements of an array",
			mutate: func(t *testing.T, ops []definition.Operator) {
				editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					editSchema(crd, "status.conditions.items", addRule(apiextensionsv1.ValidationRule{Rule: "self.reason != ''"}))
				})
			},
			want: []string{`v1alpha1 at self.status.conditions.items: x-kubernetes-validations rule "self.reason != ''" needs Kubernetes 1.25.0`},
		},
		{
			name: "an annotation explains its own place only",
			mutate: func(t *testing.T, ops []definition.Operator) {
				editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					editSchema(crd, "spec.fileSystemID", addRule(apiextensionsv1.ValidationRule{Rule: "self.startsWith('fs-')"}))
				})
			},
			want: []string{`at self.spec.fileSystemID: x-kubernetes-validations rule "self.startsWith('fs-')" needs Kubernetes 1.25.0`},
		},
		{
			name: "messageExpression newer than minKubeVersion",
			mutate: func(t *testing.T, ops []definition.Operator) {
				minKube(&ops[efs], "1.25.0")
				editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					delete(crd.Annotations, compat+"self.spec")
					editSchema(crd, "spec", func(s *apiextensionsv1.JSONSchemaProps) {
						s.XValidations[0].MessageExpression = "'spec is immutable'"
					})
				})
			},
			want: []string{`at self.spec: messageExpression of rule "self == oldSelf" needs Kubernetes 1.27.0, but minKubeVersion is 1.25.0`},
		},
		{
			name: "reason and fieldPath newer than minKubeVersion",
			mutate: func(t *testing.T, ops []definition.Operator) {
				minKube(&ops[efs], "1.27.0")
				editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					delete(crd.Annotations, compat+"self.spec")
					editSchema(crd, "spec", func(s *apiextensionsv1.JSONSchemaProps) {
						s.XValidations[0].Reason = ptr.To(apiextensionsv1.FieldValueForbidden)
						s.XValidations[0].FieldPath = ".fileSystemID"
					})
				})
			},
			want: []string{
				`reason of rule "self == oldSelf" needs Kubernetes 1.28.0, but minKubeVersion is 1.27.0`,
				`fieldPath of rule "self == oldSelf" needs Kubernetes 1.28.0`,
			},
		},
		{
			name: "optionalOldSelf newer than minKubeVersion",
			mutate: func(t *testing.T, ops []definition.Operator) {
				minKube(&ops[efs], "1.29.0")
				editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					delete(crd.Annotations, compat+"self.spec")
					editSchema(crd, "spec", func(s *apiextensionsv1.JSONSchemaProps) {
						s.XValidations[0] = apiextensionsv1.ValidationRule{Rule: "!oldSelf.hasValue() || self == oldSelf.value()", OptionalOldSelf: ptr.To(true)}
					})
				})
			},
			want: []string{`optionalOldSelf of rule "!oldSelf.hasValue() || self == oldSelf.value()" needs Kubernetes 1.30.0, but minKubeVersion is 1.29.0`},
		},
		{
			name: "atomic map on Kubernetes 1.16",
			mutate: func(t *testing.T, ops []definition.Operator) {
				editCRD(t, &ops[community], func(crd *apiextensionsv1.CustomResourceDefinition) {
					delete(crd.Annotations, compat+"self.status.claimRef")
				})
			},
			want: []string{`aws-efs-operator: owned CRD "sharedvolumes.aws-efs.managed.openshift.io" v1alpha1 at self.status.claimRef: x-kubernetes-map-type "atomic" needs Kubernetes 1.17.0, but minKubeVersion is 1.16.0`},
		},
		{
			name: "selectable fields and a deprecated version",
			mutate: func(t *testing.T, ops []definition.Operator) {
				editCRD(t, &ops[manila], func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Spec.Versions[0].SelectableFields = []apiextensionsv1.SelectableField{{JSONPath: ".spec.managementState"}}
					crd.Spec.Versions[0].Deprecated = true
				})
			},
			want: []string{
				`manila-csi-driver-operator: owned CRD "maniladrivers.csi.openshift.io" v1alpha1 at versions.v1alpha1.selectableFields: selectableFields needs Kubernetes 1.31.0, but minKubeVersion is 1.17.0`,
				`at versions.v1alpha1.deprecationWarning: deprecated/deprecationWarning needs Kubernetes 1.19.0`,
			},
		},
		{
			name:   "v1 CRD before Kubernetes 1.16",
			mutate: func(t *testing.T, ops []definition.Operator) { minKube(&ops[community], "1.15.0") },
			want:   []string{`aws-efs-operator: owned CRD "sharedvolumes.aws-efs.managed.openshift.io" is an apiextensions.k8s.io/v1 CRD, which Kubernetes before 1.16.0 cannot create, but minKubeVersion is 1.15.0`},
		},
		{
			name: "annotation for a place with nothing to explain",
			mutate: func(t *testing.T, ops []definition.Operator) {
				editCRD(t, &ops[ebs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Annotations[compat+"self.spec.managementState"] = "it is fine"
				})
			},
			want: []string{`aws-ebs-csi-driver-operator: owned CRD "awsebsdrivers.csi.openshift.io": annotation kube-compat.csi-olm.io/self.spec.managementState names "self.spec.managementState", where the CRD uses no feature newer than apiextensions.k8s.io/v1`},
		},
		{
			name: "annotation that explains nothing",
			mutate: func(t *testing.T, ops []definition.Operator) {
				editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) {
					crd.Annotations[compat+"self.spec"] = "  "
				})
			},
			want: []string{
				`annotation kube-compat.csi-olm.io/self.spec is empty`,
				`at self.spec: x-kubernetes-validations rule "self == oldSelf" needs Kubernetes 1.25.0`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := drivers.All()
			tt.mutate(t, ops)
			err := definition.Validate(ops)
			if err == nil {
				t.Fatal("Validate accepted the definition")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q:\n%v", want, err)
				}
			}
		})
	}
}

// What a CRD needs of Kubernetes is satisfied by minKubeVersion as well as by an annotation.
func TestValidateAcceptsWhatMinKubeVersionCovers(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, ops []definition.Operator)
	}{
		{"immutability rule from Kubernetes 1.25 on", func(t *testing.T, ops []definition.Operator) {
			minKube(&ops[efs], "1.25.0")
			editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) {
				delete(crd.Annotations, compat+"self.spec")
			})
		}},
		{"an annotation still explaining an older Kubernetes than minKubeVersion", func(t *testing.T, ops []definition.Operator) {
			minKube(&ops[ebs], "1.25.0")
		}},
		{"atomic map from Kubernetes 1.17 on", func(t *testing.T, ops []definition.Operator) {
			minKube(&ops[community], "1.17.0")
			editCRD(t, &ops[community], func(crd *apiextensionsv1.CustomResourceDefinition) {
				delete(crd.Annotations, compat+"self.status.claimRef")
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := drivers.All()
			tt.mutate(t, ops)
			if err := definition.Validate(ops); err != nil {
				t.Errorf("Validate refused it:\n%v", err)
			}
		})
	}
}

// Every CRD that lacks an explanation is reported, each on its own line naming its operator.
func TestValidateReportsEveryCRDKubeProblem(t *testing.T) {
	ops := drivers.All()
	editCRD(t, &ops[community], func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Annotations = nil })
	editCRD(t, &ops[efs], func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Annotations = nil })
	editCRD(t, &ops[ebs], func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Annotations = nil })
	editCRD(t, &ops[manila], func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Annotations = nil })
	err := definition.Validate(ops)
	if err == nil {
		t.Fatal("Validate accepted four CRDs without their annotations")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{
		"aws-efs-operator: owned CRD \"sharedvolumes.aws-efs.managed.openshift.io\" v1alpha1 at self.status.claimRef: x-kubernetes-map-type",
		"aws-efs-csi-driver-operator: owned CRD \"sharedvolumes.aws-efs.managed.openshift.io\" v1alpha1 at self.spec: x-kubernetes-validations",
		"aws-ebs-csi-driver-operator: owned CRD \"awsebsdrivers.csi.openshift.io\" v1alpha1 at self.status.latestAvailableRevision: x-kubernetes-validations",
		"manila-csi-driver-operator: owned CRD \"maniladrivers.csi.openshift.io\" v1alpha1 at self.status.latestAvailableRevision: x-kubernetes-validations",
	}
	if len(lines) != len(want) {
		t.Fatalf("want %d problems, one per line, got %d:\n%v", len(want), len(lines), err)
	}
	for i, prefix := range want {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("problem %d = %q, want it to start with %q", i, lines[i], prefix)
		}
	}
}

// minKube makes o declare minKubeVersion v for all its releases. An operator whose releases
// declare their OpenShift minor (EFS) derives it from the minor instead; it is moved to the
// operator's own declaration, with the minors' range, so that any version can be tried.
func minKube(o *definition.Operator, v string) {
	if first := o.Releases[0].OpenShift; first != "" {
		o.OpenShiftVersions = "v" + first
	}
	for i := range o.Releases {
		o.Releases[i].OpenShift = ""
	}
	o.MinKubeVersion = v
}
