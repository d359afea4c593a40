package lint

// OLM v1 (operator-controller) installs a registry+v1 bundle only within limits that OLM v0 does
// not have. OLMv1 checks a bundle directory against those of operator-controller v1.11.0, each
// restated here from the code that enforces it when operator-controller resolves a bundle from a
// catalog and converts it into the objects it applies. Paths below are inside the module
// github.com/operator-framework/operator-controller@v1.11.0, the reference; nothing of it is
// linked. The rules, their IDs and their sources are OLMv1Rules.
//
// What operator-controller does not refuse, and so is not checked:
//   - webhooks in general: they need a certificate provider, and the WebhookProviderCertManager
//     and WebhookProviderOpenshiftServiceCA feature gates that give one are GA and on by default
//     (internal/operator-controller/features/features.go, cmd/operator-controller/main.go
//     getCertificateProvider); only the webhook rules below apply;
//   - service accounts: the ones the CSV's permissions name are generated, the default one
//     excepted (render/registryv1/generators/generators.go BundleCSVServiceAccountGenerator), and
//     nothing else is checked of them;
//   - CRD upgrade safety (rukpak/preflights/crdupgradesafety), which compares a bundle's CRDs
//     with the ones installed on a cluster, not a bundle on its own.
//
// The one rule no code enforces is OperatorConditions: operator-controller's own documentation
// says an extension that uses the API does not work, and that nothing checks it
// (docs/project/olmv1_limitations.md in its repository); olmv1/operator-conditions looks for the
// signs a bundle shows of it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/image"
	regbundle "github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"github.com/operator-framework/operator-registry/pkg/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/registryv1"
)

// Rule is one limit OLM v1 puts on the registry+v1 bundles it installs.
type Rule struct {
	// ID names the rule in findings (their Validator): stable, "olmv1/<name>".
	ID string
	// Upstream is where operator-controller v1.11.0 enforces the rule: a path inside its module
	// and the function.
	Upstream string
	// Summary says what a bundle must do or not do.
	Summary string
}

// The IDs of the OLM v1 rules.
const (
	RuleBundleFormat                   = "olmv1/bundle-format"
	RulePackageName                    = "olmv1/package-name"
	RuleAllNamespaces                  = "olmv1/all-namespaces"
	RuleNoAPIServices                  = "olmv1/no-apiservices"
	RuleNoDependencies                 = "olmv1/no-dependencies"
	RuleDeploymentNameUnique           = "olmv1/deployment-name-unique"
	RuleDeploymentName                 = "olmv1/deployment-name"
	RuleCRDUnique                      = "olmv1/crd-unique"
	RuleOwnedCRD                       = "olmv1/owned-crd"
	RuleSupportedKind                  = "olmv1/supported-kind"
	RuleWebhookDeployment              = "olmv1/webhook-deployment"
	RuleWebhookNameUnique              = "olmv1/webhook-name-unique"
	RuleWebhookName                    = "olmv1/webhook-name"
	RuleWebhookRules                   = "olmv1/webhook-rules"
	RuleConversionWebhookAllNamespaces = "olmv1/conversion-webhook-all-namespaces"
	RuleConversionWebhookOwnedCRD      = "olmv1/conversion-webhook-owned-crd"
	RuleConversionWebhookCRDUnique     = "olmv1/conversion-webhook-crd-unique"
	RuleConversionWebhookPreserve      = "olmv1/conversion-webhook-preserve-unknown-fields"
	RuleOperatorConditions             = "olmv1/operator-conditions"
)

const (
	upstreamValidators = "internal/operator-controller/rukpak/render/registryv1/validators/validator.go "
	upstreamProvider   = "internal/operator-controller/applier/provider.go RegistryV1ManifestProvider.Get"
	upstreamGenerators = "internal/operator-controller/rukpak/render/registryv1/generators/generators.go "
)

// OLMv1Rules are the rules OLMv1 checks, in the order it checks them. The validators of
// render/registryv1/validators are the list registryv1.BundleValidator runs
// (internal/operator-controller/rukpak/render/registryv1/registryv1.go), every one of them.
var OLMv1Rules = []Rule{
	{RuleBundleFormat, "internal/operator-controller/rukpak/bundle/source/source.go fsBundleSource.GetBundle, copyMetadataPropertiesToCSV",
		"metadata/annotations.yaml reads; manifests/ has no subdirectory, every document in it decodes into an object with a kind, and one is a ClusterServiceVersion; the CSV's olm.properties annotation and metadata/properties.yaml are lists of properties"},
	{RulePackageName, upstreamValidators + "CheckPackageNameNotEmpty",
		"metadata/annotations.yaml names the package"},
	{RuleAllNamespaces, upstreamProvider + " (feature gate SingleOwnNamespaceInstallSupport, alpha and off by default: internal/operator-controller/features/features.go)",
		"the CSV supports the AllNamespaces install mode; with the feature gate on, SingleNamespace or OwnNamespace would do"},
	{RuleNoAPIServices, upstreamProvider,
		"the CSV owns no API service (spec.apiservicedefinitions.owned)"},
	{RuleNoDependencies, "internal/operator-controller/resolve/validation.go NoDependencyValidation (the resolver's one validation, cmd/operator-controller/main.go), on the properties opm renders (operator-registry pkg/registry/parse.go, registry_to_model.go ObjectsAndPropertiesFromBundle)",
		"the bundle declares no dependency: no olm.gvk.required, olm.package.required or olm.constraint property, whether from metadata/dependencies.yaml, metadata/properties.yaml, the CSV's olm.properties annotation or its required CRDs and API services"},
	{RuleDeploymentNameUnique, upstreamValidators + "CheckDeploymentSpecUniqueness",
		"the CSV's install strategy names each deployment once"},
	{RuleDeploymentName, upstreamValidators + "CheckDeploymentNameIsDNS1123SubDomain",
		"every install strategy deployment name is a DNS-1123 subdomain"},
	{RuleCRDUnique, upstreamValidators + "CheckCRDResourceUniqueness",
		"manifests/ holds each CustomResourceDefinition once"},
	{RuleOwnedCRD, upstreamValidators + "CheckOwnedCRDExistence",
		"every CRD the CSV owns is in manifests/"},
	{RuleSupportedKind, upstreamValidators + "CheckObjectSupport, and " + upstreamGenerators + "BundleAdditionalResourcesGenerator (the kinds of operator-registry pkg/lib/bundle IsSupported)",
		"every object in manifests/ besides the CSV and the CRDs is of a kind registry+v1 supports"},
	{RuleWebhookDeployment, upstreamValidators + "CheckWebhookDeploymentReferentialIntegrity",
		"every webhook definition names a deployment of the install strategy"},
	{RuleWebhookNameUnique, upstreamValidators + "CheckWebhookNameUniqueness",
		"no two webhook definitions of one type share a generateName"},
	{RuleWebhookName, upstreamValidators + "CheckWebhookNameIsDNS1123SubDomain",
		"every webhook generateName is a DNS-1123 subdomain"},
	{RuleWebhookRules, upstreamValidators + "CheckWebhookRules",
		"no admission webhook rule targets every API group, the olm.operatorframework.io group, or admissionregistration.k8s.io's webhook configurations (or all of its resources)"},
	{RuleConversionWebhookAllNamespaces, upstreamValidators + "CheckConversionWebhookSupport",
		"a bundle with a conversion webhook supports AllNamespaces and no other install mode"},
	{RuleConversionWebhookOwnedCRD, upstreamValidators + "CheckConversionWebhooksReferenceOwnedCRDs",
		"conversion webhooks convert only CRDs the CSV owns"},
	{RuleConversionWebhookCRDUnique, upstreamValidators + "CheckConversionWebhookCRDReferenceUniqueness, and " + upstreamGenerators + "BundleCRDGenerator",
		"no CRD is converted by two conversion webhooks"},
	{RuleConversionWebhookPreserve, upstreamGenerators + "BundleCRDGenerator",
		"a CRD a conversion webhook converts does not set spec.preserveUnknownFields"},
	{RuleOperatorConditions, "docs/project/olmv1_limitations.md (documented; no code checks it)",
		"the operator does not use the OperatorConditions API: no RBAC on operatorconditions.operators.coreos.com, no OPERATOR_CONDITION_NAME in its deployments"},
}

// OLMv1 checks one bundle directory against the limits of OLM v1 and returns every finding, each
// an error whose Validator is the ID of the rule it breaks and whose Message names the CSV (when
// one was read) and the object or field at fault. It reads the bundle as operator-controller
// does, every document of every file in manifests/, and goes on past what it cannot read to
// check the rest.
func OLMv1(dir string) []Problem {
	r := &olmv1Report{dir: dir}
	r.load()
	r.packageName()
	if r.csv != nil {
		r.installModes()
		r.apiServices()
		r.deployments()
		r.ownedCRDs()
		r.webhooks()
		r.operatorConditions()
	}
	r.dependencies()
	r.crds()
	r.kinds()
	return r.findings()
}

// olmv1Report is a bundle as operator-controller's registry+v1 loader reads it, and the
// findings about it.
type olmv1Report struct {
	dir string
	// annotationsRead says metadata/annotations.yaml was read; pkg is the package it names.
	annotationsRead bool
	pkg             string
	// csv is the last ClusterServiceVersion of manifests/, as operator-controller keeps it.
	csv     *v1alpha1.ClusterServiceVersion
	csvFile string
	crdList []crdObject
	others  []manifestObject

	problems []Problem
}

type crdObject struct {
	file string
	crd  *apiextensionsv1.CustomResourceDefinition
}

// add records a finding.
func (r *olmv1Report) add(rule, file, format string, args ...any) {
	r.problems = append(r.problems, Problem{File: file, Level: Error, Validator: rule, Message: fmt.Sprintf(format, args...)})
}

// findings are the findings, each message prefixed with the name of the CSV, when one was read,
// to name the bundle.
func (r *olmv1Report) findings() []Problem {
	if r.csv != nil && r.csv.Name != "" {
		for i := range r.problems {
			r.problems[i].Message = r.csv.Name + ": " + r.problems[i].Message
		}
	}
	return r.problems
}

func (r *olmv1Report) path(rel string) string { return filepath.Join(r.dir, rel) }

// load reads the bundle as source.FromFS does: the package from metadata/annotations.yaml;
// every document of every file of manifests/, none in subdirectories; the CSV, the CRDs and the
// other objects; and the properties of the CSV annotation and metadata/properties.yaml.
func (r *olmv1Report) load() {
	annotationsPath := r.path(registryv1.AnnotationsFile)
	if raw, err := os.ReadFile(annotationsPath); err != nil {
		r.add(RuleBundleFormat, annotationsPath, "OLM v1 reads the package from %s and cannot read it: %v", registryv1.AnnotationsFile, err)
	} else {
		// The keys operator-controller decodes, each a string; it ignores the others.
		var file struct {
			Annotations struct {
				Package        string `json:"operators.operatorframework.io.bundle.package.v1"`
				Channels       string `json:"operators.operatorframework.io.bundle.channels.v1"`
				DefaultChannel string `json:"operators.operatorframework.io.bundle.channel.default.v1"`
			} `json:"annotations"`
		}
		if err := yaml.Unmarshal(raw, &file); err != nil {
			r.add(RuleBundleFormat, annotationsPath, "OLM v1 cannot decode %s: %v", registryv1.AnnotationsFile, err)
		} else {
			r.annotationsRead, r.pkg = true, file.Annotations.Package
		}
	}

	manifestsDir := r.path(registryv1.ManifestsDir)
	if entries, err := os.ReadDir(manifestsDir); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				r.add(RuleBundleFormat, filepath.Join(manifestsDir, e.Name()), "manifests/ holds the subdirectory %s: OLM v1 refuses subdirectories in manifests/", e.Name())
			}
		}
	}
	objs, loadProblems := readManifests(r.dir)
	for _, p := range loadProblems {
		r.add(RuleBundleFormat, p.File, "OLM v1 cannot read the bundle's manifests: %s", p.Message)
	}
	var csvObj *manifestObject
	for _, o := range flatten(objs) {
		kind, name := o.Obj.GetKind(), o.Obj.GetName()
		switch {
		case kind == "":
			// The decoder operator-controller reads manifests with requires a kind, and not
			// (yet) an apiVersion.
			r.add(RuleBundleFormat, o.File, "the object %q has no kind: OLM v1 cannot decode it", name)
		case kind == v1alpha1.ClusterServiceVersionKind:
			csvObj = &o
		case kind == "CustomResourceDefinition":
			var crd apiextensionsv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &crd); err != nil {
				r.add(RuleBundleFormat, o.File, "OLM v1 cannot decode CustomResourceDefinition %q: %v", name, err)
				continue
			}
			r.crdList = append(r.crdList, crdObject{o.File, &crd})
		default:
			r.others = append(r.others, o)
		}
	}
	if csvObj == nil {
		if len(loadProblems) == 0 || len(objs) > 0 {
			r.add(RuleBundleFormat, manifestsDir, "no ClusterServiceVersion in manifests/: OLM v1 installs nothing without one")
		}
		r.metadataProperties()
		return
	}
	var csv v1alpha1.ClusterServiceVersion
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(csvObj.Obj.Object, &csv); err != nil {
		r.add(RuleBundleFormat, csvObj.File, "OLM v1 cannot decode ClusterServiceVersion %q: %v", csvObj.Obj.GetName(), err)
		r.metadataProperties()
		return
	}
	r.csv, r.csvFile = &csv, csvObj.File
	if raw, ok := csv.Annotations[registry.PropertyKey]; ok {
		var props []property.Property
		if err := json.Unmarshal([]byte(raw), &props); err != nil {
			r.add(RuleBundleFormat, r.csvFile, "metadata.annotations[%s] is not a JSON list of properties, which OLM v1 refuses: %v", registry.PropertyKey, err)
		}
	}
	r.metadataProperties()
}

// metadataProperties checks that metadata/properties.yaml, if there is one, decodes.
func (r *olmv1Report) metadataProperties() {
	file := r.path(registryv1.PropertiesFile)
	raw, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		r.add(RuleBundleFormat, file, "OLM v1 cannot read %s: %v", registryv1.PropertiesFile, err)
		return
	}
	var props struct {
		Properties []property.Property `json:"properties"`
	}
	if err := yaml.Unmarshal(raw, &props); err != nil {
		r.add(RuleBundleFormat, file, "OLM v1 cannot decode %s: %v", registryv1.PropertiesFile, err)
	}
}

// flatten replaces each List among objs by its items, as operator-controller's resource
// builder does.
func flatten(objs []manifestObject) []manifestObject {
	var out []manifestObject
	for _, o := range objs {
		if !o.Obj.IsList() {
			out = append(out, o)
			continue
		}
		_ = o.Obj.EachListItem(func(item runtime.Object) error {
			if u, ok := item.(*unstructured.Unstructured); ok {
				out = append(out, manifestObject{File: o.File, Obj: u})
			}
			return nil
		})
	}
	return out
}

func (r *olmv1Report) packageName() {
	if r.annotationsRead && r.pkg == "" {
		r.add(RulePackageName, r.path(registryv1.AnnotationsFile), "the annotation %s is missing or empty: OLM v1 refuses a bundle without a package name", registryv1.PackageAnnotation)
	}
}

// supportedModes are the install modes the CSV supports, in its order.
func (r *olmv1Report) supportedModes() []v1alpha1.InstallModeType {
	var modes []v1alpha1.InstallModeType
	for _, m := range r.csv.Spec.InstallModes {
		if m.Supported && !slices.Contains(modes, m.Type) {
			modes = append(modes, m.Type)
		}
	}
	return modes
}

func modeList(modes []v1alpha1.InstallModeType) string {
	if len(modes) == 0 {
		return "no install mode"
	}
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

func (r *olmv1Report) installModes() {
	modes := r.supportedModes()
	switch {
	case slices.Contains(modes, v1alpha1.InstallModeTypeAllNamespaces):
	case slices.Contains(modes, v1alpha1.InstallModeTypeSingleNamespace) || slices.Contains(modes, v1alpha1.InstallModeTypeOwnNamespace):
		r.add(RuleAllNamespaces, r.csvFile, "spec.installModes supports %s but not AllNamespaces: OLM v1 refuses the bundle unless operator-controller runs with the alpha feature gate SingleOwnNamespaceInstallSupport, off by default", modeList(modes))
	default:
		r.add(RuleAllNamespaces, r.csvFile, "spec.installModes supports %s, none of AllNamespaces, SingleNamespace and OwnNamespace: OLM v1 cannot install the bundle, whatever its feature gates", modeList(modes))
	}
}

func (r *olmv1Report) apiServices() {
	for i, api := range r.csv.Spec.APIServiceDefinitions.Owned {
		r.add(RuleNoAPIServices, r.csvFile, "spec.apiservicedefinitions.owned[%d] declares the API service %s.%s (kind %s, deployment %q): OLM v1 does not install bundles that own API services", i, api.Version, api.Group, api.Kind, api.DeploymentName)
	}
}

func (r *olmv1Report) deploymentNames() map[string]int {
	names := map[string]int{}
	for _, d := range r.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		names[d.Name]++
	}
	return names
}

func (r *olmv1Report) deployments() {
	for i, d := range r.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		if errs := k8svalidation.IsDNS1123Subdomain(d.Name); len(errs) > 0 {
			r.add(RuleDeploymentName, r.csvFile, "spec.install.spec.deployments[%d] is named %q, not a DNS-1123 subdomain, which OLM v1 refuses: %s", i, d.Name, strings.Join(errs, "; "))
		}
	}
	names := r.deploymentNames()
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if n := names[name]; n > 1 {
			r.add(RuleDeploymentNameUnique, r.csvFile, "spec.install.spec.deployments names the deployment %q %d times: OLM v1 refuses duplicate deployments", name, n)
		}
	}
}

func (r *olmv1Report) ownedCRDs() {
	inBundle := map[string]bool{}
	for _, c := range r.crdList {
		inBundle[c.crd.Name] = true
	}
	reported := map[string]bool{}
	for i, owned := range r.csv.Spec.CustomResourceDefinitions.Owned {
		if !inBundle[owned.Name] && !reported[owned.Name] {
			reported[owned.Name] = true
			r.add(RuleOwnedCRD, r.csvFile, "spec.customresourcedefinitions.owned[%d] names the CRD %q, which no manifest in manifests/ holds: OLM v1 refuses the bundle", i, owned.Name)
		}
	}
}

func (r *olmv1Report) crds() {
	files := map[string][]string{}
	for _, c := range r.crdList {
		files[c.crd.Name] = append(files[c.crd.Name], c.file)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if f := files[name]; len(f) > 1 {
			rel := make([]string, len(f))
			for i, file := range f {
				rel[i] = r.rel(file)
			}
			r.add(RuleCRDUnique, f[len(f)-1], "the CustomResourceDefinition %q is in the bundle %d times (%s): OLM v1 refuses duplicate CRDs", name, len(f), strings.Join(rel, ", "))
		}
	}
}

// rel is a path relative to the bundle directory, for messages.
func (r *olmv1Report) rel(file string) string {
	if rel, err := filepath.Rel(r.dir, file); err == nil {
		return rel
	}
	return file
}

func (r *olmv1Report) kinds() {
	for _, o := range r.others {
		if ok, _ := regbundle.IsSupported(o.Obj.GetKind()); !ok {
			r.add(RuleSupportedKind, o.File, "%s %q (apiVersion %s) is not a kind OLM v1 installs from a registry+v1 bundle", o.Obj.GetKind(), o.Obj.GetName(), o.Obj.GetAPIVersion())
		}
	}
}

// The API groups no admission webhook rule may target, and the resources of
// admissionregistration.k8s.io it may not (compared in lower case), as CheckWebhookRules has them.
var (
	forbiddenWebhookGroups            = []string{"*", "olm.operatorframework.io"}
	forbiddenAdmissionRegistrationRes = []string{"*", "mutatingwebhookconfiguration", "mutatingwebhookconfigurations", "validatingwebhookconfiguration", "validatingwebhookconfigurations"}
	// conversionWebhookModes are the install modes a bundle with a conversion webhook must
	// support, and no other.
	conversionWebhookModes = []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeAllNamespaces}
)

const admissionRegistrationGroup = "admissionregistration.k8s.io"

func (r *olmv1Report) webhooks() {
	webhooks := r.csv.Spec.WebhookDefinitions
	if len(webhooks) == 0 {
		return
	}
	deployments := r.deploymentNames()
	type key struct {
		typ  v1alpha1.WebhookAdmissionType
		name string
	}
	count := map[key]int{}
	var conversion []int
	for i, wh := range webhooks {
		where := fmt.Sprintf("spec.webhookdefinitions[%d] (%s %q)", i, wh.Type, wh.GenerateName)
		count[key{wh.Type, wh.GenerateName}]++
		if deployments[wh.DeploymentName] == 0 {
			r.add(RuleWebhookDeployment, r.csvFile, "%s names the deployment %q, which spec.install.spec.deployments does not define: OLM v1 refuses the bundle", where, wh.DeploymentName)
		}
		if errs := k8svalidation.IsDNS1123Subdomain(wh.GenerateName); len(errs) > 0 {
			r.add(RuleWebhookName, r.csvFile, "%s: the generateName is not a DNS-1123 subdomain, which OLM v1 refuses: %s", where, strings.Join(errs, "; "))
		}
		if wh.Type == v1alpha1.ConversionWebhook {
			conversion = append(conversion, i)
			continue // its rules are not used
		}
		for j, rule := range wh.Rules {
			for _, group := range rule.APIGroups {
				if slices.Contains(forbiddenWebhookGroups, group) {
					r.add(RuleWebhookRules, r.csvFile, "%s rules[%d] targets the API group %q: OLM v1 refuses admission webhooks on every group or on its own", where, j, group)
				}
				if group != admissionRegistrationGroup {
					continue
				}
				for _, res := range rule.Resources {
					if slices.Contains(forbiddenAdmissionRegistrationRes, strings.ToLower(res)) {
						r.add(RuleWebhookRules, r.csvFile, "%s rules[%d] targets the resource %q of %s: OLM v1 refuses admission webhooks on webhook configurations", where, j, res, group)
					}
				}
			}
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(count), func(a, b key) int {
		return strings.Compare(string(a.typ)+"/"+a.name, string(b.typ)+"/"+b.name)
	}) {
		if n := count[k]; n > 1 {
			r.add(RuleWebhookNameUnique, r.csvFile, "spec.webhookdefinitions has %d %s webhooks named %q: OLM v1 refuses two webhooks of one type with one name", n, k.typ, k.name)
		}
	}
	if len(conversion) == 0 {
		return
	}

	if modes := r.supportedModes(); !slices.Equal(modes, conversionWebhookModes) {
		for _, i := range conversion {
			r.add(RuleConversionWebhookAllNamespaces, r.csvFile, "spec.webhookdefinitions[%d] (ConversionWebhook %q) is a conversion webhook, and spec.installModes supports %s: OLM v1 accepts conversion webhooks only in bundles that support AllNamespaces and no other mode", i, webhooks[i].GenerateName, modeList(modes))
		}
	}
	owned := map[string]bool{}
	for _, crd := range r.csv.Spec.CustomResourceDefinitions.Owned {
		owned[crd.Name] = true
	}
	convertedBy := map[string][]string{}
	for _, i := range conversion {
		wh := webhooks[i]
		for _, crd := range wh.ConversionCRDs {
			convertedBy[crd] = append(convertedBy[crd], wh.GenerateName)
			if !owned[crd] {
				r.add(RuleConversionWebhookOwnedCRD, r.csvFile, "spec.webhookdefinitions[%d] (ConversionWebhook %q) converts the CRD %q, which the CSV does not own (spec.customresourcedefinitions.owned): OLM v1 refuses the bundle", i, wh.GenerateName, crd)
			}
		}
	}
	for _, crd := range slices.Sorted(maps.Keys(convertedBy)) {
		if by := convertedBy[crd]; len(by) > 1 {
			r.add(RuleConversionWebhookCRDUnique, r.csvFile, "the CRD %q is converted by %d conversion webhooks (%s): OLM v1 accepts one per CRD", crd, len(by), strings.Join(by, ", "))
		}
	}
	for _, c := range r.crdList {
		if by, ok := convertedBy[c.crd.Name]; ok && c.crd.Spec.PreserveUnknownFields {
			r.add(RuleConversionWebhookPreserve, c.file, "the CustomResourceDefinition %q sets spec.preserveUnknownFields, and the conversion webhook %q converts it: OLM v1 refuses it, as the API server would not call the webhook", c.crd.Name, by[0])
		}
	}
}

// operatorConditionsGroup is the API group of OLM v0's OperatorCondition.
const operatorConditionsGroup = "operators.coreos.com"

func (r *olmv1Report) operatorConditions() {
	strategy := r.csv.Spec.InstallStrategy.StrategySpec
	for _, perms := range []struct {
		field string
		list  []v1alpha1.StrategyDeploymentPermissions
	}{{"clusterPermissions", strategy.ClusterPermissions}, {"permissions", strategy.Permissions}} {
		for _, p := range perms.list {
			for j, rule := range p.Rules {
				if !slices.Contains(rule.APIGroups, operatorConditionsGroup) {
					continue
				}
				for _, res := range rule.Resources {
					if res == "operatorconditions" || strings.HasPrefix(res, "operatorconditions/") {
						r.add(RuleOperatorConditions, r.csvFile, "spec.install.spec.%s[%s] rules[%d] grants access to %s.%s: the operator uses the OperatorConditions API, which OLM v1 does not support (no OperatorCondition is created for it)", perms.field, p.ServiceAccountName, j, res, operatorConditionsGroup)
					}
				}
			}
		}
	}
	for _, d := range strategy.DeploymentSpecs {
		pod := d.Spec.Template.Spec
		for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
			for _, env := range c.Env {
				if env.Name == "OPERATOR_CONDITION_NAME" {
					r.add(RuleOperatorConditions, r.csvFile, "deployment %q container %q sets OPERATOR_CONDITION_NAME: the operator uses the OperatorConditions API, which OLM v1 does not support", d.Name, c.Name)
				}
			}
		}
	}
}

// dependencyTypes are the property types NoDependencyValidation refuses.
var dependencyTypes = []string{property.TypeGVKRequired, property.TypePackageRequired, property.TypeConstraint}

const dependencyRefused = "OLM v1 refuses bundles that declare dependencies"

// dependencies finds the properties opm renders into the bundle's olm.bundle that declare
// dependencies, where each comes from: the CSV's required CRDs and API services and its
// olm.properties annotation, and the first file of metadata/ with dependencies and the first with
// properties, as opm's bundle parser reads them. Then it renders the bundle as opm does and
// reports any dependency it renders that none of those accounts for.
func (r *olmv1Report) dependencies() {
	found := map[string]bool{}
	note := func(p property.Property) bool {
		if !slices.Contains(dependencyTypes, p.Type) {
			return false
		}
		found[propertyKey(p.Type, p.Value)] = true
		return true
	}
	if r.csv != nil {
		for i, crd := range r.csv.Spec.CustomResourceDefinitions.Required {
			_, group, _ := strings.Cut(crd.Name, ".")
			p := property.MustBuildGVKRequired(group, crd.Version, crd.Kind)
			note(p)
			r.add(RuleNoDependencies, r.csvFile, "spec.customresourcedefinitions.required[%d] requires the CRD %q (%s %s), which opm renders as the property %s %s: %s", i, crd.Name, crd.Kind, crd.Version, p.Type, p.Value, dependencyRefused)
		}
		for i, api := range r.csv.Spec.APIServiceDefinitions.Required {
			p := property.MustBuildGVKRequired(api.Group, api.Version, api.Kind)
			note(p)
			r.add(RuleNoDependencies, r.csvFile, "spec.apiservicedefinitions.required[%d] requires the API %s.%s (kind %s), which opm renders as the property %s %s: %s", i, api.Version, api.Group, api.Kind, p.Type, p.Value, dependencyRefused)
		}
		if raw, ok := r.csv.Annotations[registry.PropertyKey]; ok {
			var props []property.Property
			if json.Unmarshal([]byte(raw), &props) == nil {
				for i, p := range props {
					if note(p) {
						r.add(RuleNoDependencies, r.csvFile, "metadata.annotations[%s][%d] is the property %s %s: %s", registry.PropertyKey, i, p.Type, compact(p.Value), dependencyRefused)
					}
				}
			}
		}
	}
	depsFile, deps, propsFile, props := r.metadataFiles()
	for i, d := range deps {
		p, ok := dependencyProperty(d)
		if !ok || !note(p) {
			continue
		}
		r.add(RuleNoDependencies, depsFile, "dependencies[%d] (%s %s) becomes the property %s %s: %s", i, d.Type, compact(d.Value), p.Type, p.Value, dependencyRefused)
	}
	for i, p := range props {
		if note(property.Property{Type: p.Type, Value: p.Value}) {
			r.add(RuleNoDependencies, propsFile, "properties[%d] is the property %s %s: %s", i, p.Type, compact(p.Value), dependencyRefused)
		}
	}
	for _, p := range renderedProperties(r.dir) {
		if slices.Contains(dependencyTypes, p.Type) && !found[propertyKey(p.Type, p.Value)] {
			found[propertyKey(p.Type, p.Value)] = true
			r.add(RuleNoDependencies, r.dir, "opm renders the property %s %s for the bundle: %s", p.Type, compact(p.Value), dependencyRefused)
		}
	}
}

// metadataFiles finds, as opm's bundle parser does, the first file of metadata/ (in name order)
// that lists dependencies and the first that lists properties.
func (r *olmv1Report) metadataFiles() (depsFile string, deps []registry.Dependency, propsFile string, props []registry.Property) {
	dir := r.path(registryv1.MetadataDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, "", nil
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		file := filepath.Join(dir, e.Name())
		raw, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		if deps == nil {
			var df registry.DependenciesFile
			if decodeFirst(raw, &df) == nil && len(df.Dependencies) > 0 {
				depsFile, deps = file, df.Dependencies
			}
		}
		if props == nil {
			var pf registry.PropertiesFile
			if decodeFirst(raw, &pf) == nil && len(pf.Properties) > 0 {
				propsFile, props = file, pf.Properties
			}
		}
	}
	return depsFile, deps, propsFile, props
}

// decodeFirst decodes the first YAML or JSON document of raw.
func decodeFirst(raw []byte, into any) error {
	err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 30).Decode(into)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// dependencyProperty is the property opm renders a dependency of metadata/ as: olm.gvk and
// olm.package become olm.gvk.required and olm.package.required, other types stay as they are.
func dependencyProperty(d registry.Dependency) (property.Property, bool) {
	switch d.Type {
	case registry.GVKType:
		var v property.GVK
		if err := json.Unmarshal(d.Value, &v); err != nil {
			return property.Property{}, false
		}
		return property.MustBuildGVKRequired(v.Group, v.Version, v.Kind), true
	case registry.PackageType:
		var v property.Package
		if err := json.Unmarshal(d.Value, &v); err != nil {
			return property.Property{}, false
		}
		return property.MustBuildPackageRequired(v.PackageName, v.Version), true
	}
	return property.Property{Type: d.Type, Value: d.Value}, true
}

// renderedProperties are the properties opm renders for the bundle directory, or none when it
// cannot render it (the other validators say why).
func renderedProperties(dir string) []property.Property {
	input, err := registry.NewImageInput(image.SimpleReference(""), dir)
	if err != nil {
		return nil
	}
	_, props, err := registry.ObjectsAndPropertiesFromBundle(input.Bundle)
	if err != nil {
		return nil
	}
	return props
}

// propertyKey identifies a property by its type and its value, whatever the JSON's layout.
func propertyKey(typ string, value []byte) string {
	return typ + " " + compact(value)
}

// compact is a JSON value with its keys sorted, no spaces and no HTML escapes, or the value as it
// is if it is not JSON.
func compact(value []byte) string {
	var v any
	if json.Unmarshal(value, &v) != nil {
		return string(value)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(value)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// OLMv1Objects are the objects of a bundle directory's manifests/ as OLM v1 reads them (Lists
// replaced by their items), for a caller that needs what OLM v1 will apply; OLMv1 says whether
// it installs them at all.
func OLMv1Objects(dir string) ([]*unstructured.Unstructured, error) {
	objs, problems := readManifests(dir)
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.File + ": " + p.Message
		}
		return nil, fmt.Errorf("reading bundle %s: %s", dir, strings.Join(msgs, "; "))
	}
	var out []*unstructured.Unstructured
	for _, o := range flatten(objs) {
		out = append(out, o.Obj)
	}
	return out, nil
}
