package registryv1_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/operator-framework/operator-registry/pkg/registry"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/registryv1"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/operator/assets"
)

// TestCSVAnnotationsTellTheTruth: OperatorHub filters operators on these annotations, so each
// says what the operator does. The legacy infrastructure-features list holds only values that
// annotation knows, and agrees with the features.operators.openshift.io annotations.
func TestCSVAnnotationsTellTheTruth(t *testing.T) {
	legacyValues := map[string]definition.InfrastructureFeature{}
	for f, v := range definition.LegacyInfrastructureFeatures {
		legacyValues[v] = f
	}
	for _, b := range buildAll(t) {
		t.Run(b.Dir(), func(t *testing.T) {
			csv := csvOf(t, b)
			var legacy []string
			if err := json.Unmarshal([]byte(csv.Annotations["operators.openshift.io/infrastructure-features"]), &legacy); err != nil {
				t.Fatalf("infrastructure-features: %v", err)
			}
			for _, v := range legacy {
				f, ok := legacyValues[v]
				if !ok {
					t.Errorf("infrastructure-features lists %q, which that annotation does not know", v)
					continue
				}
				if got := csv.Annotations[definition.FeatureAnnotations[f]]; got != "true" {
					t.Errorf("infrastructure-features lists %q but %s is %q", v, definition.FeatureAnnotations[f], got)
				}
			}
			for f, key := range definition.FeatureAnnotations {
				got := csv.Annotations[key]
				if got != "true" && got != "false" {
					t.Errorf("%s = %q, want true or false", key, got)
				}
				if v, ok := definition.LegacyInfrastructureFeatures[f]; ok && got == "true" && !slices.Contains(legacy, v) {
					t.Errorf("%s is true but infrastructure-features lacks %q", key, v)
				}
			}
			// Only the EFS operator ships a PodDisruptionBudget, its controller's.
			usesPDB := strings.HasPrefix(csv.Name, efs.OperatorName+".") && efsShipsPDB(t)
			for _, p := range slices.Concat(csv.Spec.InstallStrategy.StrategySpec.Permissions, csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions) {
				for _, r := range p.Rules {
					if slices.Contains(r.Resources, "poddisruptionbudgets") && !usesPDB {
						t.Errorf("%s is granted %v on poddisruptionbudgets, which it never uses", p.ServiceAccountName, r.Verbs)
					}
				}
			}
		})
	}
}

// efsShipsPDB says whether the EFS operator's driver manifests hold a PodDisruptionBudget.
func efsShipsPDB(t *testing.T) bool {
	t.Helper()
	read := assets.For("ns")
	for _, f := range assets.OperandFiles {
		raw, err := read(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj struct{ Kind string }
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if obj.Kind == "PodDisruptionBudget" {
			return true
		}
	}
	return false
}

// TestEFSOperatorRunsOnAReadOnlyRoot: the EFS operator's container has a read-only root and a
// writable /tmp of its own (an emptyDir), as OpenShift's EFS operator runs; the real-node
// OperatorHub install runs the operator from this CSV under the kubelet, which enforces both.
func TestEFSOperatorRunsOnAReadOnlyRoot(t *testing.T) {
	found := 0
	for _, b := range buildAll(t) {
		if !strings.HasPrefix(b.CSVName, efs.OperatorName+".") {
			continue
		}
		found++
		for _, dep := range csvOf(t, b).Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			pod := dep.Spec.Template.Spec
			c := pod.Containers[0]
			if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s: container %s has a writable root", b.Dir(), c.Name)
			}
			tmp := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" })
			if tmp < 0 {
				t.Errorf("%s: container %s has no /tmp of its own", b.Dir(), c.Name)
				continue
			}
			v := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[tmp].Name })
			if v < 0 || pod.Volumes[v].EmptyDir == nil || c.VolumeMounts[tmp].ReadOnly {
				t.Errorf("%s: /tmp of container %s is not a writable emptyDir", b.Dir(), c.Name)
			}
		}
	}
	if found == 0 {
		t.Fatal("no EFS bundle built")
	}
}

// TestEFSOperatorPodLabels: the EFS operator's pod carries the labels OpenShift's storage
// NetworkPolicies allow traffic by, as OpenShift's EFS operator pod does, and its Deployment's
// selector is the same in every release: OLM upgrades the Deployment in place, and a selector
// cannot change.
func TestEFSOperatorPodLabels(t *testing.T) {
	var selector string
	for _, b := range buildAll(t) {
		if !strings.HasPrefix(b.CSVName, efs.OperatorName+".") {
			continue
		}
		for _, dep := range csvOf(t, b).Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			for _, policy := range []string{"all-egress", "dns", "api-server", "operator-metrics-range"} {
				if got := dep.Spec.Template.Labels["openshift.storage.network-policy."+policy]; got != "allow" {
					t.Errorf("%s: the operator's pod has network-policy label %s = %q, want allow", b.Dir(), policy, got)
				}
			}
			got := fmt.Sprint(dep.Spec.Selector.MatchLabels)
			if selector == "" {
				selector = got
			}
			if got != selector {
				t.Errorf("%s: the operator's Deployment selects %s, another release %s", b.Dir(), got, selector)
			}
		}
	}
	if selector == "" {
		t.Fatal("no EFS bundle built")
	}
}

// TestEFSOperatorNetworkPolicy: each EFS bundle ships one NetworkPolicy that selects the
// operator's pod as the CSV's Deployment labels it, lets in only the cluster's Prometheus on the
// container's metrics port, and leaves egress open (the API server's address is the cluster's).
func TestEFSOperatorNetworkPolicy(t *testing.T) {
	found := 0
	for _, b := range buildAll(t) {
		if !strings.HasPrefix(b.CSVName, efs.OperatorName+".") {
			continue
		}
		found++
		var policies []networkingv1.NetworkPolicy
		for name, raw := range b.Files {
			var policy networkingv1.NetworkPolicy
			if !strings.HasPrefix(name, "manifests/") || yaml.Unmarshal(raw, &policy) != nil || policy.Kind != "NetworkPolicy" {
				continue
			}
			policies = append(policies, policy)
		}
		if len(policies) != 1 {
			t.Errorf("%s ships %d NetworkPolicies, want 1", b.Dir(), len(policies))
			continue
		}
		policy := policies[0].Spec
		dep := csvOf(t, b).Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec
		selector, err := metav1.LabelSelectorAsSelector(&policy.PodSelector)
		if err != nil || policy.PodSelector.Size() == 0 || !selector.Matches(labels.Set(dep.Template.Labels)) {
			t.Errorf("%s: the NetworkPolicy selects %v, not the operator's pod %v (%v)", b.Dir(), policy.PodSelector, dep.Template.Labels, err)
		}
		if !slices.Equal(policy.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) ||
			len(policy.Egress) != 1 || len(policy.Egress[0].To)+len(policy.Egress[0].Ports) != 0 {
			t.Errorf("%s: the NetworkPolicy's types %v, egress %+v: want both types, egress open", b.Dir(), policy.PolicyTypes, policy.Egress)
		}
		ports := dep.Template.Spec.Containers[0].Ports
		if len(policy.Ingress) != 1 || len(policy.Ingress[0].Ports) != 1 || len(ports) != 1 ||
			policy.Ingress[0].Ports[0].Port.IntValue() != int(ports[0].ContainerPort) ||
			len(policy.Ingress[0].From) != 1 || policy.Ingress[0].From[0].NamespaceSelector == nil ||
			policy.Ingress[0].From[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "openshift-monitoring" {
			t.Errorf("%s: the NetworkPolicy lets in %+v; want only openshift-monitoring on the container's port %v", b.Dir(), policy.Ingress, ports)
		}
	}
	if found == 0 {
		t.Fatal("no EFS bundle built")
	}
}

// TestSupportedEFSAnnotations: the supported EFS operator serves with the cluster's TLS profile
// and runs with STS, and OperatorHub offers the ClusterCSIDriver that enables the driver.
func TestSupportedEFSAnnotations(t *testing.T) {
	found := 0
	for _, b := range buildAll(t) {
		if !strings.HasPrefix(b.CSVName, "aws-efs-csi-driver-operator.") {
			continue
		}
		found++
		csv := csvOf(t, b)
		for _, key := range []string{definition.FeatureAnnotations[definition.TLSProfiles], definition.FeatureAnnotations[definition.TokenAuthAWS]} {
			if csv.Annotations[key] != "true" {
				t.Errorf("%s: %s = %q, want true", b.Dir(), key, csv.Annotations[key])
			}
		}
		// The cluster may go one OpenShift minor past the release, and no further.
		v := csv.Spec.Version.Version
		var props registry.PropertiesFile
		if err := yaml.UnmarshalStrict(b.Files[registryv1.PropertiesFile], &props); err != nil || len(props.Properties) != 1 ||
			props.Properties[0].Type != registryv1.MaxOpenShiftVersionProperty || string(props.Properties[0].Value) != fmt.Sprintf(`"%d.%d"`, v.Major, v.Minor+1) {
			t.Errorf("%s: %s = %q (%v), want only %s %d.%d", b.Dir(), registryv1.PropertiesFile, b.Files[registryv1.PropertiesFile], err, registryv1.MaxOpenShiftVersionProperty, v.Major, v.Minor+1)
		}
		var cr operatorv1.ClusterCSIDriver
		if err := yaml.UnmarshalStrict([]byte(csv.Annotations["operatorframework.io/initialization-resource"]), &cr); err != nil {
			t.Errorf("%s: initialization resource: %v", b.Dir(), err)
		}
		if cr.Kind != "ClusterCSIDriver" || cr.Name != "efs.csi.aws.com" || cr.Spec.ManagementState != operatorv1.Managed {
			t.Errorf("%s: initialization resource is %s %q (%s), want ClusterCSIDriver efs.csi.aws.com Managed", b.Dir(), cr.Kind, cr.Name, cr.Spec.ManagementState)
		}
		for _, want := range []string{"ROLEARN", "ccoctl aws create-iam-roles", "CredentialsRequest"} {
			if !strings.Contains(csv.Spec.Description, want) {
				t.Errorf("%s: the description does not say how to run with STS (%q)", b.Dir(), want)
			}
		}
	}
	if found == 0 {
		t.Fatal("no supported EFS bundle was built")
	}
}
