package lint_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/sirupsen/logrus"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/lint"
)

func init() {
	// operator-registry's bundle parser, which the OLM v1 dependency check renders bundles with,
	// logs every optional file it does not find.
	logrus.SetLevel(logrus.WarnLevel)
}

// efsHeadCSV is the name of the CSV of efsHead, which every OLM v1 finding about it must name.
const efsHeadCSV = "aws-efs-csi-driver-operator.v4.11.0"

// The shipped objects of efsHead the cases below break or copy.
const (
	efsDeployment = "aws-efs-csi-driver-operator"
	efsCRD        = "sharedvolumes.aws-efs.managed.openshift.io"
	efsCRDFile    = "manifests/aws-efs.managed.openshift.io_sharedvolumes.yaml"
	efsService    = "manifests/aws-efs-csi-driver-operator-metrics_v1_service.yaml"
)

// Every committed bundle is one OLM v1 installs.
func TestOLMv1CommittedBundles(t *testing.T) {
	for _, dir := range committed {
		for _, p := range lint.OLMv1(dir) {
			t.Errorf("%s", p)
		}
	}
	// The same through the verb's action, which finds the bundles itself: all eight, no error.
	var out bytes.Buffer
	v := &lint.Validate{Paths: []string{".."}, OLMv1: true, Strict: true, Explain: lint.ExplainerFor(drivers.All()), Out: &out}
	if err := v.Run(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "8 bundles: 0 errors, 0 warnings, 7 explained warnings") {
		t.Errorf("unexpected summary:\n%s", out.String())
	}
}

// patchYAML applies RFC 6902 operations, written in YAML, to a YAML file.
func patchYAML(t *testing.T, file, ops string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	opsJSON, err := yaml.YAMLToJSON([]byte(ops))
	if err != nil {
		t.Fatalf("operations: %v", err)
	}
	patch, err := jsonpatch.DecodePatch(opsJSON)
	if err != nil {
		t.Fatalf("operations: %v", err)
	}
	if doc, err = patch.Apply(doc); err != nil {
		t.Fatalf("patching %s: %v", file, err)
	}
	if raw, err = yaml.JSONToYAML(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, file string) []byte {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func writeFile(t *testing.T, file string, raw []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shippedDeployment is the CSV's operator Deployment as a manifest of its own.
func shippedDeployment(t *testing.T, dir string) []byte {
	t.Helper()
	var csv struct {
		Spec struct {
			Install struct {
				Spec struct {
					Deployments []struct {
						Name string         `json:"name"`
						Spec map[string]any `json:"spec"`
					} `json:"deployments"`
				} `json:"spec"`
			} `json:"install"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(dir, csvFile)), &csv); err != nil {
		t.Fatal(err)
	}
	d := csv.Spec.Install.Spec.Deployments[0]
	raw, err := yaml.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": d.Name}, "spec": d.Spec})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// webhook is a webhook definition served by the shipped operator Deployment, as YAML.
func webhook(typ, name string, extra string) string {
	return `
    - generateName: ` + name + `
      type: ` + typ + `
      deploymentName: ` + efsDeployment + `
      containerPort: 443
      admissionReviewVersions: [v1]
      sideEffects: None` + extra
}

func addWebhooks(t *testing.T, dir string, webhooks ...string) {
	t.Helper()
	patchYAML(t, filepath.Join(dir, csvFile), "- op: add\n  path: /spec/webhookdefinitions\n  value:"+strings.Join(webhooks, ""))
}

const sharedVolumeRules = `
      rules:
      - apiGroups: [aws-efs.managed.openshift.io]
        apiVersions: [v1alpha1]
        operations: [CREATE, UPDATE]
        resources: [sharedvolumes]`

// olmv1Want is a finding a broken bundle must have: its rule, the file it names (relative to
// the bundle) and what its message says.
type olmv1Want struct {
	rule, file string
	contains   []string
}

// TestOLMv1BrokenBundles breaks a copy of the newest committed bundle against each rule. Every
// finding wanted must be there, naming the file, the CSV and the object; and there must be no
// finding of any other OLM v1 rule, nor more of a rule than wanted.
func TestOLMv1BrokenBundles(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   []olmv1Want
	}{
		{
			name: "OwnNamespace instead of AllNamespaces",
			break_: func(t *testing.T, dir string) {
				// The shipped order: OwnNamespace, SingleNamespace, MultiNamespace, AllNamespaces.
				patchYAML(t, filepath.Join(dir, csvFile), `
- {op: test, path: /spec/installModes/3/type, value: AllNamespaces}
- {op: replace, path: /spec/installModes/3/supported, value: false}
- {op: test, path: /spec/installModes/0/type, value: OwnNamespace}
- {op: replace, path: /spec/installModes/0/supported, value: true}`)
			},
			want: []olmv1Want{{lint.RuleAllNamespaces, csvFile, []string{"spec.installModes supports OwnNamespace but not AllNamespaces", "SingleOwnNamespaceInstallSupport"}}},
		},
		{
			name: "MultiNamespace only",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, csvFile), `
- {op: test, path: /spec/installModes/2/type, value: MultiNamespace}
- {op: replace, path: /spec/installModes/2/supported, value: true}
- {op: replace, path: /spec/installModes/3/supported, value: false}`)
			},
			want: []olmv1Want{{lint.RuleAllNamespaces, csvFile, []string{"supports MultiNamespace, none of AllNamespaces, SingleNamespace and OwnNamespace"}}},
		},
		{
			name: "owned API service",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, csvFile), `
- op: add
  path: /spec/apiservicedefinitions/owned
  value:
  - {name: sharedvolumes, group: aws-efs.managed.openshift.io, version: v1alpha1, kind: SharedVolume, deploymentName: `+efsDeployment+`}`)
			},
			want: []olmv1Want{{lint.RuleNoAPIServices, csvFile, []string{"spec.apiservicedefinitions.owned[0]", "v1alpha1.aws-efs.managed.openshift.io"}}},
		},
		{
			name: "dependencies.yaml",
			break_: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "metadata", "dependencies.yaml"), []byte(`dependencies:
- type: olm.gvk
  value: {group: operator.openshift.io, kind: ClusterCSIDriver, version: v1}
- type: olm.package
  value: {packageName: cert-manager, version: ">=1.0.0"}
- type: olm.constraint
  value: {failureMessage: needs cert-manager, cel: {rule: 'properties.exists(p, p.type == "olm.package")'}}
`))
			},
			want: []olmv1Want{
				{lint.RuleNoDependencies, "metadata/dependencies.yaml", []string{"dependencies[0] (olm.gvk", "olm.gvk.required", "ClusterCSIDriver"}},
				{lint.RuleNoDependencies, "metadata/dependencies.yaml", []string{`dependencies[1] (olm.package {"packageName":"cert-manager","version":">=1.0.0"})`, `olm.package.required {"packageName":"cert-manager","versionRange":">=1.0.0"}`}},
				{lint.RuleNoDependencies, "metadata/dependencies.yaml", []string{"dependencies[2] (olm.constraint", "needs cert-manager"}},
			},
		},
		{
			name: "dependency in properties.yaml",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, "metadata", "properties.yaml"), `
- op: add
  path: /properties/-
  value: {type: olm.package.required, value: {packageName: cert-manager, versionRange: ">=1.0.0"}}`)
			},
			want: []olmv1Want{{lint.RuleNoDependencies, "metadata/properties.yaml", []string{"properties[1] is the property olm.package.required", "cert-manager"}}},
		},
		{
			name: "dependencies in the CSV",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, csvFile), `
- op: add
  path: /metadata/annotations/olm.properties
  value: '[{"type":"olm.constraint","value":{"failureMessage":"needs a cluster","cel":{"rule":"true"}}}]'
- op: add
  path: /spec/customresourcedefinitions/required
  value: [{name: clustercsidrivers.operator.openshift.io, kind: ClusterCSIDriver, version: v1}]
- op: add
  path: /spec/apiservicedefinitions/required
  value: [{name: widgets, group: example.com, version: v1, kind: Widget}]`)
			},
			want: []olmv1Want{
				{lint.RuleNoDependencies, csvFile, []string{"metadata.annotations[olm.properties][0] is the property olm.constraint"}},
				{lint.RuleNoDependencies, csvFile, []string{"spec.customresourcedefinitions.required[0]", "clustercsidrivers.operator.openshift.io", `olm.gvk.required {"group":"operator.openshift.io","kind":"ClusterCSIDriver","version":"v1"}`}},
				{lint.RuleNoDependencies, csvFile, []string{"spec.apiservicedefinitions.required[0]", "v1.example.com", "olm.gvk.required"}},
			},
		},
		{
			name: "deployment twice",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, csvFile), "- {op: copy, from: /spec/install/spec/deployments/0, path: /spec/install/spec/deployments/-}")
			},
			want: []olmv1Want{{lint.RuleDeploymentNameUnique, csvFile, []string{`names the deployment "` + efsDeployment + `" 2 times`}}},
		},
		{
			name: "deployment name not a DNS subdomain",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, csvFile), "- {op: replace, path: /spec/install/spec/deployments/0/name, value: AWS_EFS_Operator}")
			},
			want: []olmv1Want{{lint.RuleDeploymentName, csvFile, []string{`spec.install.spec.deployments[0] is named "AWS_EFS_Operator"`, "a lowercase RFC 1123 subdomain"}}},
		},
		{
			name: "CRD twice",
			break_: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "manifests", "zz-copy.yaml"), readFile(t, filepath.Join(dir, efsCRDFile)))
			},
			want: []olmv1Want{{lint.RuleCRDUnique, "manifests/zz-copy.yaml", []string{`"` + efsCRD + `" is in the bundle 2 times`, efsCRDFile}}},
		},
		{
			name: "owned CRD missing",
			break_: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, efsCRDFile)); err != nil {
					t.Fatal(err)
				}
			},
			want: []olmv1Want{{lint.RuleOwnedCRD, csvFile, []string{"spec.customresourcedefinitions.owned[0]", efsCRD}}},
		},
		{
			name: "Deployment manifest next to a Service, in one file",
			break_: func(t *testing.T, dir string) {
				raw := append(readFile(t, filepath.Join(dir, efsService)), "\n---\n"...)
				writeFile(t, filepath.Join(dir, "manifests", "operator.yaml"), append(raw, shippedDeployment(t, dir)...))
			},
			want: []olmv1Want{{lint.RuleSupportedKind, "manifests/operator.yaml", []string{`Deployment "` + efsDeployment + `" (apiVersion apps/v1) is not a kind`}}},
		},
		{
			name: "webhook of no deployment",
			break_: func(t *testing.T, dir string) {
				addWebhooks(t, dir, strings.Replace(webhook("ValidatingAdmissionWebhook", "vsharedvolume.kb.io", sharedVolumeRules), "deploymentName: "+efsDeployment, "deploymentName: efs-webhook", 1))
			},
			want: []olmv1Want{{lint.RuleWebhookDeployment, csvFile, []string{`spec.webhookdefinitions[0] (ValidatingAdmissionWebhook "vsharedvolume.kb.io") names the deployment "efs-webhook"`}}},
		},
		{
			name: "two validating webhooks of one name",
			break_: func(t *testing.T, dir string) {
				addWebhooks(t, dir,
					webhook("ValidatingAdmissionWebhook", "sharedvolume.kb.io", sharedVolumeRules),
					webhook("ValidatingAdmissionWebhook", "sharedvolume.kb.io", sharedVolumeRules),
					// A mutating webhook may share the name.
					webhook("MutatingAdmissionWebhook", "sharedvolume.kb.io", sharedVolumeRules))
			},
			want: []olmv1Want{{lint.RuleWebhookNameUnique, csvFile, []string{`2 ValidatingAdmissionWebhook webhooks named "sharedvolume.kb.io"`}}},
		},
		{
			name: "webhook name not a DNS subdomain",
			break_: func(t *testing.T, dir string) {
				addWebhooks(t, dir, webhook("ValidatingAdmissionWebhook", "SharedVolume_Validator", sharedVolumeRules))
			},
			want: []olmv1Want{{lint.RuleWebhookName, csvFile, []string{`spec.webhookdefinitions[0] (ValidatingAdmissionWebhook "SharedVolume_Validator")`, "a lowercase RFC 1123 subdomain"}}},
		},
		{
			name: "webhook rules on every group, OLM's group and webhook configurations",
			break_: func(t *testing.T, dir string) {
				addWebhooks(t, dir,
					webhook("ValidatingAdmissionWebhook", "everything.kb.io", `
      rules:
      - {apiGroups: ["*"], apiVersions: [v1], operations: [CREATE], resources: [pods]}`),
					webhook("MutatingAdmissionWebhook", "olm.kb.io", `
      rules:
      - {apiGroups: [olm.operatorframework.io], apiVersions: [v1], operations: [CREATE], resources: [clusterextensions]}
      - {apiGroups: [admissionregistration.k8s.io], apiVersions: [v1], operations: [CREATE], resources: [ValidatingWebhookConfigurations]}`))
			},
			want: []olmv1Want{
				{lint.RuleWebhookRules, csvFile, []string{`spec.webhookdefinitions[0] (ValidatingAdmissionWebhook "everything.kb.io") rules[0] targets the API group "*"`}},
				{lint.RuleWebhookRules, csvFile, []string{`spec.webhookdefinitions[1] (MutatingAdmissionWebhook "olm.kb.io") rules[0] targets the API group "olm.operatorframework.io"`}},
				{lint.RuleWebhookRules, csvFile, []string{`rules[1] targets the resource "ValidatingWebhookConfigurations" of admissionregistration.k8s.io`}},
			},
		},
		{
			name: "conversion webhook in a bundle that also supports OwnNamespace",
			break_: func(t *testing.T, dir string) {
				addWebhooks(t, dir, webhook("ConversionWebhook", "csharedvolume.kb.io", "\n      conversionCRDs: ["+efsCRD+"]"))
				patchYAML(t, filepath.Join(dir, csvFile), `
- {op: test, path: /spec/installModes/0/type, value: OwnNamespace}
- {op: replace, path: /spec/installModes/0/supported, value: true}`)
			},
			want: []olmv1Want{{lint.RuleConversionWebhookAllNamespaces, csvFile, []string{`spec.webhookdefinitions[0] (ConversionWebhook "csharedvolume.kb.io")`, "supports OwnNamespace, AllNamespaces"}}},
		},
		{
			name: "conversion webhook of a CRD the CSV does not own",
			break_: func(t *testing.T, dir string) {
				addWebhooks(t, dir, webhook("ConversionWebhook", "cclustercsidriver.kb.io", "\n      conversionCRDs: [clustercsidrivers.operator.openshift.io]"))
			},
			want: []olmv1Want{{lint.RuleConversionWebhookOwnedCRD, csvFile, []string{`(ConversionWebhook "cclustercsidriver.kb.io") converts the CRD "clustercsidrivers.operator.openshift.io"`}}},
		},
		{
			name: "two conversion webhooks of one CRD",
			break_: func(t *testing.T, dir string) {
				addWebhooks(t, dir,
					webhook("ConversionWebhook", "csharedvolume.kb.io", "\n      conversionCRDs: ["+efsCRD+"]"),
					webhook("ConversionWebhook", "csharedvolume2.kb.io", "\n      conversionCRDs: ["+efsCRD+"]"))
			},
			want: []olmv1Want{{lint.RuleConversionWebhookCRDUnique, csvFile, []string{`the CRD "` + efsCRD + `" is converted by 2 conversion webhooks (csharedvolume.kb.io, csharedvolume2.kb.io)`}}},
		},
		{
			name: "conversion webhook of a CRD that preserves unknown fields",
			break_: func(t *testing.T, dir string) {
				addWebhooks(t, dir, webhook("ConversionWebhook", "csharedvolume.kb.io", "\n      conversionCRDs: ["+efsCRD+"]"))
				patchYAML(t, filepath.Join(dir, efsCRDFile), "- {op: add, path: /spec/preserveUnknownFields, value: true}")
			},
			want: []olmv1Want{{lint.RuleConversionWebhookPreserve, efsCRDFile, []string{`"` + efsCRD + `" sets spec.preserveUnknownFields`, `"csharedvolume.kb.io"`}}},
		},
		{
			name: "OperatorConditions",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, csvFile), `
- op: add
  path: /spec/install/spec/clusterPermissions/0/rules/-
  value: {apiGroups: [operators.coreos.com], resources: [operatorconditions], verbs: [get, update, patch]}
- op: add
  path: /spec/install/spec/deployments/0/spec/template/spec/containers/0/env/-
  value: {name: OPERATOR_CONDITION_NAME, value: `+efsHeadCSV+`}`)
			},
			want: []olmv1Want{
				{lint.RuleOperatorConditions, csvFile, []string{"spec.install.spec.clusterPermissions[aws-efs-csi-driver-operator]", "operatorconditions.operators.coreos.com"}},
				{lint.RuleOperatorConditions, csvFile, []string{`deployment "` + efsDeployment + `" container`, "OPERATOR_CONDITION_NAME"}},
			},
		},
		{
			name: "no package annotation",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, "metadata", "annotations.yaml"), "- {op: remove, path: /annotations/operators.operatorframework.io.bundle.package.v1}")
			},
			want: []olmv1Want{{lint.RulePackageName, "metadata/annotations.yaml", []string{"operators.operatorframework.io.bundle.package.v1 is missing"}}},
		},
		{
			name: "subdirectory in manifests",
			break_: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "manifests", "extra", "service.yaml"), readFile(t, filepath.Join(dir, efsService)))
			},
			want: []olmv1Want{{lint.RuleBundleFormat, "manifests/extra", []string{"manifests/ holds the subdirectory extra"}}},
		},
		{
			name: "manifest without a kind, and a truncated one",
			break_: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "manifests", "service-copy.yaml"), readFile(t, filepath.Join(dir, efsService)))
				patchYAML(t, filepath.Join(dir, "manifests", "service-copy.yaml"), "- {op: remove, path: /kind}")
				crd := readFile(t, filepath.Join(dir, efsCRDFile))
				// Cut off inside a flow mapping.
				cut := append(slices.Clone(crd[:bytes.Index(crd, []byte("  names:"))]), `  names: {kind: "Shared`...)
				writeFile(t, filepath.Join(dir, "manifests", "crd-truncated.yaml"), cut)
			},
			want: []olmv1Want{
				{lint.RuleBundleFormat, "manifests/service-copy.yaml", []string{`the object "aws-efs-csi-driver-operator-metrics" has no kind`}},
				{lint.RuleBundleFormat, "manifests/crd-truncated.yaml", []string{"cannot read the bundle's manifests: not a valid manifest"}},
			},
		},
		{
			name: "olm.properties annotation and properties.yaml that are not lists of properties",
			break_: func(t *testing.T, dir string) {
				patchYAML(t, filepath.Join(dir, csvFile), "- {op: add, path: /metadata/annotations/olm.properties, value: '{\"type\": \"olm.maxOpenShiftVersion\"}'}")
				patchYAML(t, filepath.Join(dir, "metadata", "properties.yaml"), "- {op: replace, path: /properties, value: {type: olm.maxOpenShiftVersion}}")
			},
			want: []olmv1Want{
				{lint.RuleBundleFormat, csvFile, []string{"metadata.annotations[olm.properties] is not a JSON list of properties"}},
				{lint.RuleBundleFormat, "metadata/properties.yaml", []string{"OLM v1 cannot decode metadata/properties.yaml"}},
			},
		},
		{
			name: "no annotations file",
			break_: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "metadata", "annotations.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			want: []olmv1Want{{lint.RuleBundleFormat, "metadata/annotations.yaml", []string{"OLM v1 reads the package from metadata/annotations.yaml and cannot read it"}}},
		},
		{
			name: "no CSV",
			break_: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, csvFile)); err != nil {
					t.Fatal(err)
				}
			},
			want: []olmv1Want{{lint.RuleBundleFormat, "manifests", []string{"no ClusterServiceVersion in manifests/"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyBundle(t, efsHead)
			tt.break_(t, dir)
			problems := lint.OLMv1(dir)
			_, noCSV := os.Stat(filepath.Join(dir, csvFile))
			wanted := map[string]int{}
			for _, w := range tt.want {
				wanted[w.rule]++
				found := false
				for _, p := range problems {
					if p.Validator != w.rule || p.File != filepath.Join(dir, w.file) || p.Level != lint.Error {
						continue
					}
					// The CSV names the bundle in every message, when the bundle has one.
					ok := noCSV != nil || strings.HasPrefix(p.Message, efsHeadCSV+": ")
					for _, c := range w.contains {
						ok = ok && strings.Contains(p.Message, c)
					}
					found = found || ok
				}
				if !found {
					t.Errorf("no [%s] finding in %s naming %s and saying %q; got:\n%s", w.rule, w.file, efsHeadCSV, w.contains, list(problems))
				}
			}
			got := map[string]int{}
			for _, p := range problems {
				got[p.Validator]++
				if !strings.HasPrefix(p.File, dir) {
					t.Errorf("finding outside the bundle: %s", p)
				}
			}
			for rule, n := range got {
				if n != wanted[rule] {
					t.Errorf("%d [%s] findings, want %d:\n%s", n, rule, wanted[rule], list(problems))
				}
			}
		})
		for _, w := range tt.want {
			ruleTested[w.rule] = true
		}
	}
	for _, r := range lint.OLMv1Rules {
		if !ruleTested[r.ID] {
			t.Errorf("no case breaks the rule %s", r.ID)
		}
	}
}

var ruleTested = map[string]bool{}

// TestOLMv1ThroughValidate: with OLMv1 the action reports the OLM v1 findings of every bundle,
// among the other validators' problems, and fails; without it the same bundle passes, as it
// does for OLM v0.
func TestOLMv1ThroughValidate(t *testing.T) {
	broken := copyBundle(t, efsHead)
	editFile(t, filepath.Join(broken, csvFile), "  - supported: true\n    type: AllNamespaces", "  - supported: false\n    type: AllNamespaces")
	editFile(t, filepath.Join(broken, csvFile), "  - supported: false\n    type: OwnNamespace", "  - supported: true\n    type: OwnNamespace")
	explain := lint.ExplainerFor(drivers.All())
	var out bytes.Buffer
	err := (&lint.Validate{Paths: []string{broken, "../manila-csi-driver-operator"}, OLMv1: true, Explain: explain, Out: &out}).Run(context.Background())
	if err == nil {
		t.Fatalf("an OwnNamespace-only bundle passed --olm v1:\n%s", out.String())
	}
	for _, want := range []string{
		"FAIL " + broken + "\n",
		filepath.Join(broken, csvFile) + ": error: [olmv1/all-namespaces] " + efsHeadCSV + ": spec.installModes supports OwnNamespace but not AllNamespaces",
		"ok ../manila-csi-driver-operator/4.5.0\n",
		"2 bundles: 1 errors, 0 warnings, 2 explained warnings",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := (&lint.Validate{Paths: []string{broken}, Explain: explain, Out: &out}).Run(context.Background()); err != nil {
		t.Errorf("without OLMv1: %v\n%s", err, out.String())
	}
}

// A path without a bundle is an error, and the bundles of the other paths are still validated.
func TestValidateGoesOnPastAPathWithoutBundles(t *testing.T) {
	empty := t.TempDir()
	var out bytes.Buffer
	err := (&lint.Validate{Paths: []string{empty, efsHead}, OLMv1: true, Explain: lint.ExplainerFor(drivers.All()), Out: &out}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "1 paths without a bundle") {
		t.Fatalf("a path without a bundle: err = %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"FAIL " + empty + "\n  " + empty + ": error: [Load] no bundle under " + empty,
		"ok " + efsHead + "\n",
		"1 bundles: 0 errors, 0 warnings, 2 explained warnings, 1 paths without a bundle",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestOLMv1RulesCiteOperatorController: every rule cites a file of operator-controller v1.11.0
// that holds the function it names, when the module is in the module cache (the reference the
// rules were read from).
func TestOLMv1RulesCiteOperatorController(t *testing.T) {
	modCache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(modCache)), "github.com", "operator-framework", "operator-controller@v1.11.0")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("operator-controller v1.11.0 is not in the module cache: %v", err)
	}
	ids := map[string]bool{}
	for _, r := range lint.OLMv1Rules {
		if !strings.HasPrefix(r.ID, "olmv1/") || ids[r.ID] {
			t.Errorf("rule ID %q is not olmv1/<name> or is not unique", r.ID)
		}
		ids[r.ID] = true
		if r.Summary == "" {
			t.Errorf("%s says nothing", r.ID)
		}
		fields := strings.Fields(r.Upstream)
		if len(fields) < 2 {
			t.Errorf("%s: upstream %q names no file and function", r.ID, r.Upstream)
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, fields[0]))
		if err != nil {
			t.Errorf("%s: %v", r.ID, err)
			continue
		}
		if strings.HasSuffix(fields[0], ".go") {
			fn := strings.TrimSuffix(fields[1], ",")
			if _, method, ok := strings.Cut(fn, "."); ok {
				fn = method
			}
			if !bytes.Contains(raw, []byte("func "+fn+"(")) && !bytes.Contains(raw, []byte(") "+fn+"(")) {
				t.Errorf("%s: %s has no function %s", r.ID, fields[0], fn)
			}
		} else if !bytes.Contains(raw, []byte("OperatorConditions")) {
			t.Errorf("%s: %s does not speak of OperatorConditions", r.ID, fields[0])
		}
	}
	// The rules of registryv1.BundleValidator are all there.
	raw, err := os.ReadFile(filepath.Join(root, "internal/operator-controller/rukpak/render/registryv1/registryv1.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		fn, ok := strings.CutPrefix(strings.TrimSpace(line), "validators.")
		if !ok {
			continue
		}
		fn = strings.TrimSuffix(fn, ",")
		if !slices.ContainsFunc(lint.OLMv1Rules, func(r lint.Rule) bool { return strings.Contains(r.Upstream, " "+fn) }) {
			t.Errorf("operator-controller runs validators.%s, which no rule cites", fn)
		}
	}
}
