package registryv1_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/registryv1"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// The committed bundles under bundle/ are this package's golden files.
var update = flag.Bool("update", false, "rewrite the committed bundles (as `make bundle` does)")

const bundleRoot = ".."

func buildAll(t *testing.T) []*registryv1.Bundle {
	t.Helper()
	bundles, err := registryv1.All(drivers.All())
	if err != nil {
		t.Fatalf("building the shipped definitions: %v", err)
	}
	return bundles
}

// TestBundlesMatchCommitted fails, with a diff, when a definition changed without its bundles
// being regenerated.
func TestBundlesMatchCommitted(t *testing.T) {
	for _, b := range buildAll(t) {
		files := map[string]string{}
		for name, content := range b.Files {
			files[name] = string(content)
		}
		testutil.CheckGoldenTree(t, filepath.Join(bundleRoot, b.Dir()), files, *update,
			"run `make bundle` or `go test ./bundle/registryv1 -update`")
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	first, second := buildAll(t), buildAll(t)
	for i := range first {
		for name, content := range first[i].Files {
			if !bytes.Equal(content, second[i].Files[name]) {
				t.Errorf("%s/%s differs between two builds", first[i].Dir(), name)
			}
		}
	}
}

func csvOf(t *testing.T, b *registryv1.Bundle) *v1alpha1.ClusterServiceVersion {
	t.Helper()
	var csv v1alpha1.ClusterServiceVersion
	raw := b.Files["manifests/"+b.CSVName+".clusterserviceversion.yaml"]
	if err := yaml.UnmarshalStrict(raw, &csv); err != nil {
		t.Fatalf("%s: CSV does not decode strictly: %v", b.Dir(), err)
	}
	return &csv
}

// TestCSVContent checks, bundle by bundle, what the architecture document requires of the CSVs.
func TestCSVContent(t *testing.T) {
	want := map[string]struct {
		replaces, skipRange, minKube, defaultChannel, channels, namespace, deployment string
		ownedCRDs                                                                     string
		env                                                                           []string
	}{
		"aws-efs-operator/0.0.6": {"", "", "1.16.0", "stable", "stable", "openshift-operators", "aws-efs-operator", "sharedvolumes.aws-efs.managed.openshift.io", nil},
		"aws-efs-operator/0.0.7": {"aws-efs-operator.v0.0.6", "", "1.16.0", "stable", "stable", "openshift-operators", "aws-efs-operator", "sharedvolumes.aws-efs.managed.openshift.io", nil},
		"aws-efs-operator/0.0.8": {"aws-efs-operator.v0.0.7", "", "1.16.0", "stable", "stable", "openshift-operators", "aws-efs-operator", "sharedvolumes.aws-efs.managed.openshift.io", nil},
		"aws-efs-operator/4.9.0": {"", ">=0.0.6 <4.9.0", "1.22.0", "stable", "stable,4.9", "openshift-cluster-csi-drivers", "aws-efs-csi-driver-operator", "sharedvolumes.aws-efs.managed.openshift.io,removalfences.aws-efs.csi-olm.io",
			[]string{"DRIVER_IMAGE", "PROVISIONER_IMAGE", "NODE_DRIVER_REGISTRAR_IMAGE", "LIVENESS_PROBE_IMAGE", "KUBE_RBAC_PROXY_IMAGE"}},
		"aws-efs-operator/4.10.0": {"", ">=0.0.6 <4.10.0", "1.23.0", "stable", "stable,4.10,4.9", "openshift-cluster-csi-drivers", "aws-efs-csi-driver-operator", "sharedvolumes.aws-efs.managed.openshift.io,removalfences.aws-efs.csi-olm.io",
			[]string{"DRIVER_IMAGE", "PROVISIONER_IMAGE", "NODE_DRIVER_REGISTRAR_IMAGE", "LIVENESS_PROBE_IMAGE", "KUBE_RBAC_PROXY_IMAGE"}},
		"aws-efs-operator/4.11.0": {"", ">=0.0.6 <4.11.0", "1.24.0", "stable", "stable,4.11,4.10,4.9", "openshift-cluster-csi-drivers", "aws-efs-csi-driver-operator", "sharedvolumes.aws-efs.managed.openshift.io,removalfences.aws-efs.csi-olm.io",
			[]string{"DRIVER_IMAGE", "PROVISIONER_IMAGE", "NODE_DRIVER_REGISTRAR_IMAGE", "LIVENESS_PROBE_IMAGE", "KUBE_RBAC_PROXY_IMAGE"}},
		"aws-ebs-csi-driver-operator/4.5.0": {"", ">=4.3.0 <4.5.0", "1.17.0", "preview", "preview", "openshift-aws-ebs-csi-driver-operator", "aws-ebs-csi-driver-operator", "awsebsdrivers.csi.openshift.io",
			[]string{"DRIVER_IMAGE", "PROVISIONER_IMAGE", "ATTACHER_IMAGE", "RESIZER_IMAGE", "SNAPSHOTTER_IMAGE", "NODE_DRIVER_REGISTRAR_IMAGE", "LIVENESS_PROBE_IMAGE"}},
		"manila-csi-driver-operator/4.5.0": {"", "", "1.17.0", "stable", "stable", "openshift-manila-csi-driver-operator", "csi-driver-manila-operator", "maniladrivers.csi.openshift.io",
			[]string{"EXTERNAL_PROVISIONER_IMAGE", "EXTERNAL_SNAPSHOTTER_IMAGE", "CSI_DRIVER_MANILA_IMAGE", "CSI_NODE_DRIVER_REGISTRAR_IMAGE", "CSI_DRIVER_NFS_IMAGE"}},
	}
	bundles := buildAll(t)
	if len(bundles) != len(want) {
		t.Errorf("built %d bundles, want %d", len(bundles), len(want))
	}
	for _, b := range bundles {
		t.Run(b.Dir(), func(t *testing.T) {
			w, ok := want[b.Dir()]
			if !ok {
				t.Fatalf("unexpected bundle %s", b.Dir())
			}
			csv := csvOf(t, b)
			for _, m := range csv.Spec.InstallModes {
				if m.Supported != (m.Type == v1alpha1.InstallModeTypeAllNamespaces) {
					t.Errorf("install mode %s supported=%v: only AllNamespaces may be supported", m.Type, m.Supported)
				}
			}
			if len(csv.Spec.InstallModes) != 4 {
				t.Errorf("CSV declares %d install modes, want all 4", len(csv.Spec.InstallModes))
			}
			if csv.Spec.Replaces != w.replaces {
				t.Errorf("replaces = %q, want %q", csv.Spec.Replaces, w.replaces)
			}
			if got := csv.Annotations["olm.skipRange"]; got != w.skipRange {
				t.Errorf("olm.skipRange = %q, want %q", got, w.skipRange)
			}
			if csv.Spec.MinKubeVersion != w.minKube {
				t.Errorf("minKubeVersion = %q, want %q", csv.Spec.MinKubeVersion, w.minKube)
			}
			if got := csv.Annotations["operatorframework.io/suggested-namespace"]; got != w.namespace {
				t.Errorf("suggested namespace = %q, want %q", got, w.namespace)
			}
			for _, key := range []string{"operators.openshift.io/infrastructure-features", "categories", "capabilities", "description", "alm-examples", "containerImage", "createdAt"} {
				if csv.Annotations[key] == "" {
					t.Errorf("annotation %s is missing", key)
				}
			}
			if csv.Spec.Description == "" || len(csv.Spec.Icon) != 1 || csv.Spec.Icon[0].MediaType != "image/svg+xml" {
				t.Errorf("description or icon missing")
			}
			var owned []string
			for _, crd := range csv.Spec.CustomResourceDefinitions.Owned {
				owned = append(owned, crd.Name)
			}
			if got := strings.Join(owned, ","); got != w.ownedCRDs {
				t.Errorf("owned CRDs = %s, want %s", got, w.ownedCRDs)
			}
			for _, name := range strings.Split(w.ownedCRDs, ",") {
				if _, ok := b.Files["manifests/"+crdFile(name)]; !ok {
					t.Errorf("owned CRD %s is not in the bundle", name)
				}
			}
			var annotations struct{ Annotations map[string]string }
			if err := yaml.Unmarshal(b.Files[registryv1.AnnotationsFile], &annotations); err != nil {
				t.Fatal(err)
			}
			a := annotations.Annotations
			if a[registryv1.DefaultChannelAnnotation] != w.defaultChannel || a[registryv1.ChannelsAnnotation] != w.channels || a[registryv1.PackageAnnotation] != strings.Split(b.Dir(), "/")[0] {
				t.Errorf("annotations = %v", a)
			}
			deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
			if len(deps) != 1 || deps[0].Name != w.deployment {
				t.Fatalf("deployments = %+v, want one named %s", deps, w.deployment)
			}
			related := map[string]bool{}
			for _, img := range csv.Spec.RelatedImages {
				if problem := definition.ImageProblem(img.Image, false); problem != "" {
					t.Errorf("related image %s: %s", img.Name, problem)
				}
				related[img.Image] = true
			}
			c := deps[0].Spec.Template.Spec.Containers[0]
			if !related[c.Image] {
				t.Errorf("operator image %s is not a related image", c.Image)
			}
			var env []string
			for _, e := range c.Env {
				if strings.HasSuffix(e.Name, "_IMAGE") {
					env = append(env, e.Name)
					if !related[e.Value] {
						t.Errorf("env %s=%s is not a related image", e.Name, e.Value)
					}
				}
			}
			if !slices.Equal(env, w.env) {
				t.Errorf("image env = %v, want %v", env, w.env)
			}
			if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("operator container may escalate privileges")
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
				t.Errorf("operator container has no resource requests")
			}
		})
	}
}

func crdFile(name string) string {
	plural, group, _ := strings.Cut(name, ".")
	return group + "_" + plural + ".yaml"
}

// TestCommunityVersionsUpgradeToSupportedEFS checks the edges the source switch relies on
// (docs/architecture.md#upgrades): the first GA and the head each accept every community version.
func TestCommunityVersionsUpgradeToSupportedEFS(t *testing.T) {
	var community []string
	heads := map[string]*v1alpha1.ClusterServiceVersion{}
	for _, b := range buildAll(t) {
		if b.Package != "aws-efs-operator" {
			continue
		}
		csv := csvOf(t, b)
		if strings.HasPrefix(b.CSVName, "aws-efs-operator.") {
			community = append(community, b.Version)
		} else if b.Version == "4.10.0" || b.Version == "4.11.0" {
			heads[b.Version] = csv
		}
	}
	if len(community) != 3 || len(heads) != 2 {
		t.Fatalf("community versions %v, GA releases %d", community, len(heads))
	}
	for v, csv := range heads {
		inRange := semver.MustParseRange(csv.Annotations["olm.skipRange"])
		for _, c := range community {
			if !inRange(semver.MustParse(c)) {
				t.Errorf("%s does not accept community %s", v, c)
			}
			if !csv.Spec.Version.GT(semver.MustParse(c)) {
				t.Errorf("%s is not newer than community %s", v, c)
			}
		}
	}
}

// TestExamplesAreValidCustomResources validates each alm-example against its CRD's schema, as
// the API server would when a user creates it from the OperatorHub form.
func TestExamplesAreValidCustomResources(t *testing.T) {
	for _, b := range buildAll(t) {
		csv := csvOf(t, b)
		var examples []map[string]any
		if err := yaml.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
			t.Fatalf("%s: alm-examples is not JSON: %v", b.Dir(), err)
		}
		if len(examples) == 0 {
			t.Errorf("%s: no examples", b.Dir())
		}
		for _, ex := range examples {
			obj := unstructured.Unstructured{Object: ex}
			crd := crdFor(t, b, obj.GetKind())
			for _, v := range crd.Spec.Versions {
				if obj.GroupVersionKind().Version != v.Name {
					continue
				}
				var internal apiextensions.JSONSchemaProps
				if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
					t.Fatal(err)
				}
				validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
				if err != nil {
					t.Fatal(err)
				}
				if errs := apiservervalidation.ValidateCustomResource(field.NewPath(""), ex, validator); len(errs) > 0 {
					t.Errorf("%s: example %s is invalid: %v", b.Dir(), obj.GetName(), errs.ToAggregate())
				}
			}
		}
	}
}

// TestEveryOwnedCRDHasAnExampleOrIsInternal: OperatorHub shows an owned CRD with its example, or
// hides it when the CSV lists it in operators.operatorframework.io/internal-objects; a CRD with
// neither would be offered with an empty form.
func TestEveryOwnedCRDHasAnExampleOrIsInternal(t *testing.T) {
	for _, b := range buildAll(t) {
		csv := csvOf(t, b)
		var examples []map[string]any
		if err := yaml.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
			t.Fatalf("%s: alm-examples is not JSON: %v", b.Dir(), err)
		}
		var internal []string
		if raw, ok := csv.Annotations["operators.operatorframework.io/internal-objects"]; ok {
			if err := json.Unmarshal([]byte(raw), &internal); err != nil {
				t.Fatalf("%s: internal-objects is not a JSON list: %v", b.Dir(), err)
			}
		}
		for _, owned := range csv.Spec.CustomResourceDefinitions.Owned {
			exampled := slices.ContainsFunc(examples, func(ex map[string]any) bool { return ex["kind"] == owned.Kind })
			hidden := slices.Contains(internal, owned.Name)
			if exampled == hidden {
				t.Errorf("%s: owned CRD %s has an example: %v, is internal: %v; want exactly one", b.Dir(), owned.Name, exampled, hidden)
			}
		}
	}
}

func crdFor(t *testing.T, b *registryv1.Bundle, kind string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	for name, content := range b.Files {
		if !strings.HasPrefix(name, "manifests/") || strings.HasSuffix(name, ".clusterserviceversion.yaml") {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(content, &crd); err == nil && crd.Spec.Names.Kind == kind {
			return &crd
		}
	}
	t.Fatalf("%s: no CRD for kind %s", b.Dir(), kind)
	return nil
}
