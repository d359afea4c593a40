package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// DecodeCRD decodes one CRD manifest strictly.
func DecodeCRD(raw []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return nil, fmt.Errorf("decoding CRD: %w", err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return nil, fmt.Errorf("not a CustomResourceDefinition (kind %q, name %q)", crd.Kind, crd.Name)
	}
	return &crd, nil
}

// InstallCRDs creates or updates CRDs and waits until the API server serves them all.
func InstallCRDs(ctx context.Context, c client.Client, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		desired := crd.DeepCopy()
		if err := c.Create(ctx, desired); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
			}
			var existing apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &existing); err != nil {
				return err
			}
			desired.ResourceVersion = existing.ResourceVersion
			if err := c.Update(ctx, desired); err != nil {
				return fmt.Errorf("updating CRD %s: %w", crd.Name, err)
			}
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var got apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	// The client's REST mapper learns new kinds lazily; nothing more to wait for.
	return nil
}

// openShiftCRDFiles are the CRDs, from github.com/openshift/api, of the APIs every OpenShift
// cluster serves and that library-go CSI operators read (docs/architecture.md#what-an-openshift-cluster-provides).
var openShiftCRDFiles = []string{
	"operator/v1/zz_generated.crd-manifests/0000_50_csi-driver_01_clustercsidrivers-Default.crd.yaml",
	"operator/v1/zz_generated.crd-manifests/0000_40_cloud-credential_00_cloudcredentials.crd.yaml",
	"config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_infrastructures-Default.crd.yaml",
	"config/v1/zz_generated.crd-manifests/0000_03_config-operator_01_proxies.crd.yaml",
	"config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_apiservers-Default.crd.yaml",
	"config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_featuregates.crd.yaml",
	"config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml",
	"config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml",
	"config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_networks-Default.crd.yaml",
	"security/v1/zz_generated.crd-manifests/0000_03_config-operator_01_securitycontextconstraints.crd.yaml",
}

// OpenShiftCRDs returns the OpenShift API CRDs from a copy of github.com/openshift/api (hack/tools.sh
// openshift-crds prints one), plus stand-ins for the CRDs that live outside openshift/api.
func OpenShiftCRDs(openshiftAPIDir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range openShiftCRDFiles {
		raw, err := os.ReadFile(filepath.Join(openshiftAPIDir, f))
		if err != nil {
			return nil, fmt.Errorf("reading OpenShift CRD: %w", err)
		}
		crd, err := DecodeCRD(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	crds = append(crds,
		openCRD("cloudcredential.openshift.io", "v1", "CredentialsRequest", "credentialsrequests", true),
		openCRD("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors", true),
		openCRD("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules", true),
	)
	return crds, nil
}

// openCRD serves a kind whose schema the test bed does not check. CredentialsRequest,
// ServiceMonitor and PrometheusRule come from projects outside this module's dependencies; the
// operators under test only need the API to exist, and the tests read back what was written.
func openCRD(group, version, kind, plural string, namespaced bool) *apiextensionsv1.CustomResourceDefinition {
	scope := apiextensionsv1.ClusterScoped
	if namespaced {
		scope = apiextensionsv1.NamespaceScoped
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}
