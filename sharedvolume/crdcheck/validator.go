// Package crdcheck is the `csi-olm efs check-sharedvolumes` verb. Moving a community
// aws-efs-operator install to the certified operator under OLM v1 replaces the community
// SharedVolume CRD with the certified one, which is stricter (spec required, IDs at most 64
// characters, an enum on status.phase, CEL rules). OLM v1's CRD upgrade-safety preflight refuses
// that change, and turning the preflight off for the one upgrade is safe only when every
// SharedVolume already in the cluster is valid under the certified CRD: this package says whether
// it is, validating each object the way the API server validates it.
package crdcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// Validator validates custom resources against one CRD's schemas, as the API server serving
// that CRD does.
type Validator struct {
	// CRD is the CRD the objects are validated against.
	CRD *apiextensionsv1.CustomResourceDefinition
	// versions holds the served versions with a schema, by name.
	versions map[string]*version
}

type version struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	// rules is nil when the version has no x-kubernetes-validations.
	rules *cel.Validator
}

// NewValidator compiles the schemas and CEL rules of every served version of a CRD manifest.
func NewValidator(manifest []byte) (*Validator, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(manifest, &crd); err != nil {
		return nil, fmt.Errorf("decoding the CRD: %w", err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Spec.Group == "" || crd.Spec.Names.Kind == "" {
		return nil, fmt.Errorf("not a CustomResourceDefinition (kind %q, name %q)", crd.Kind, crd.Name)
	}
	v := &Validator{CRD: &crd, versions: map[string]*version{}}
	for _, cv := range crd.Spec.Versions {
		if !cv.Served {
			continue
		}
		if cv.Schema == nil || cv.Schema.OpenAPIV3Schema == nil {
			return nil, fmt.Errorf("CRD %s version %s has no schema: nothing to validate against", crd.Name, cv.Name)
		}
		compiled, err := compile(cv.Schema.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, cv.Name, err)
		}
		v.versions[cv.Name] = compiled
	}
	if len(v.versions) == 0 {
		return nil, fmt.Errorf("CRD %s serves no version", crd.Name)
	}
	return v, nil
}

// compile builds what the API server builds for a version when it starts serving a CRD
// (apiextensions-apiserver's crdHandler), so that validating here gives the server's answer.
func compile(v1Schema *apiextensionsv1.JSONSchemaProps) (*version, error) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1Schema, &internal, nil); err != nil {
		return nil, fmt.Errorf("converting the schema: %w", err)
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fmt.Errorf("the schema is not structural: %w", err)
	}
	// The server prunes the defaults of its copy; defaulting below needs it done.
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("pruning the schema's defaults: %w", err)
	}
	schemaValidator, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, fmt.Errorf("building the schema validator: %w", err)
	}
	return &version{structural: s, schema: schemaValidator, rules: cel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
}

// Versions returns the names of the versions the CRD serves, in its order.
func (v *Validator) Versions() []string {
	var names []string
	for _, cv := range v.CRD.Spec.Versions {
		if _, ok := v.versions[cv.Name]; ok {
			names = append(names, cv.Name)
		}
	}
	return names
}

// Validate returns every problem the API server serving the CRD reports on a write of the object,
// each as "field.path: reason" in the server's words, or none when it is valid.
//
// What follows a CRD upgrade are updates that leave the object as it is (a status write, a label,
// the removal of a finalizer), so transition rules (those with oldSelf) see oldSelf equal to self.
// Unlike the server since Kubernetes 1.30, it does not ratchet (let an update keep an invalid value
// it does not change): the server still refuses those values in every create (a restore, a GitOps
// re-apply) and every write that sets them, and a root-level error such as a missing required spec
// is never ratcheted, since any update changes the root.
func (v *Validator) Validate(obj *unstructured.Unstructured) []string {
	errs := v.validate(obj)
	problems := make([]string, len(errs))
	for i, err := range errs {
		problems[i] = err.Error()
	}
	return problems
}

func (v *Validator) validate(obj *unstructured.Unstructured) field.ErrorList {
	gvk := obj.GroupVersionKind()
	var errs field.ErrorList
	if gvk.Kind != v.CRD.Spec.Names.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), gvk.Kind, "must be "+v.CRD.Spec.Names.Kind))
	}
	ver, served := v.versions[gvk.Version]
	if gvk.Group != v.CRD.Spec.Group || !served {
		var supported []string
		for _, name := range v.Versions() {
			supported = append(supported, v.CRD.Spec.Group+"/"+name)
		}
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), obj.GetAPIVersion(), supported))
	}
	if len(errs) > 0 {
		// Like the server: an object of another type has no schema to be checked against.
		return errs
	}

	// What the server validates is the object as it decodes it from storage: pruned of the fields
	// the schema does not know, and defaulted.
	content := runtime.DeepCopyJSON(obj.UnstructuredContent())
	structuralpruning.Prune(content, ver.structural, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(content, ver.structural)
	structuraldefaulting.Default(content, ver.structural)

	// The schema steps, in their order, of the server's customResourceStrategy.ValidateUpdate,
	// without ratcheting.
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, content, ver.schema)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, content, ver.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ver.structural, content)...)
	sortErrors(errs)
	if ver.rules == nil {
		return errs
	}
	if blocking(errs) {
		// Like the server, which evaluates no rule on an object of the wrong shape: the rules' cost
		// was estimated from the schema's types and bounds. A rerun, once these are fixed, checks them.
		return errs
	}
	// The cost budget bounds the evaluation, as on the server; there is nothing to cancel.
	ruleErrs, _ := ver.rules.Validate(context.Background(), nil, ver.structural, content, content, celconfig.RuntimeCELCostBudget)
	sortErrors(ruleErrs)
	return append(errs, ruleErrs...)
}

// blocking is the server's hasBlockingErr: errors after which the CEL rules are not run.
func blocking(errs field.ErrorList) bool {
	return slices.ContainsFunc(errs, func(err *field.Error) bool {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
		return false
	})
}

// sortErrors orders errors by field path: the schema validator walks maps in random order, and a
// report that changes from run to run reads as a change in the cluster.
func sortErrors(errs field.ErrorList) {
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.Error(), b.Error())
	})
}
