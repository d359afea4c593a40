// Package manila defines the OLM-era (4.5) OpenStack Manila CSI driver operator. csi-olm ships
// it so that clusters still running it can be migrated to the cluster-storage-operator
// (`csi-olm migrate cso`).
package maniladriver

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers/icons"
	"github.com/csi-olm/csi-olm/bundle/drivers/internal/rules"
	"github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/manilacrd"
	manilav1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/v1alpha1"
	"github.com/csi-olm/csi-olm/internal/names/manila"
)

const description = `The CSI Manila driver is able to create and mount OpenStack Manila shares along with
snapshots and recovering shares from snapshots.

The driver leverages the OpenStack Manila service to provide scalable and persistent storage for
stateful applications. CSI driver Manila documentation is available
[here](https://github.com/kubernetes/cloud-provider-openstack/blob/master/docs/using-manila-csi-plugin.md).

Create the ` + "`ManilaDriver`" + ` named ` + "`cluster`" + ` to deploy the driver into the
` + "`" + manila.OperandNamespace + "`" + ` namespace. From OpenShift 4.6 on, the cluster-storage-operator manages
this driver through ClusterCSIDriver ` + "`" + manila.CSIDriver + "`" + `; run ` + "`csi-olm migrate cso --driver manila`" + `
to hand it over.
`

// Operator returns the OpenStack Manila operator definition.
func Operator() definition.Operator {
	return definition.Operator{
		Package:     manila.Package,
		CSVPrefix:   manila.CSVPrefix,
		Catalog:     definition.Certified,
		DisplayName: "CSI Driver Manila Operator",
		Summary:     "A Container Storage Interface (CSI) driver for OpenStack Manila.",
		Description: description,
		Keywords:    []string{"OpenStack Manila", "Manila CSI", "CSI"},
		Maintainers: []v1alpha1.Maintainer{
			{Name: "Red Hat", Email: "aos-storage-staff@redhat.com"},
			{Name: "OpenShift ShiftStack Team", Email: "shiftstack-team@redhat.com"},
		},
		Provider: v1alpha1.AppLink{Name: "Red Hat"},
		Links: []v1alpha1.AppLink{
			{Name: "CSI Driver Documentation", URL: "https://github.com/kubernetes/cloud-provider-openstack/blob/master/docs/using-manila-csi-plugin.md"},
			{Name: "GitHub Repository", URL: "https://github.com/openshift/csi-driver-manila-operator"},
			{Name: "OpenStack Manila Documentation", URL: "https://docs.openstack.org/manila/latest/"},
		},
		IconSVG:      icons.Manila,
		Categories:   []string{"Storage"},
		Capabilities: "Seamless Upgrades",
		Repository:   "https://github.com/openshift/csi-driver-manila-operator",
		Support:      "Red Hat",

		SuggestedNamespace:     manila.OperatorNamespace,
		InfrastructureFeatures: []definition.InfrastructureFeature{definition.CSI},
		OpenShiftVersions:      "=v4.5",
		Architectures:          []string{"amd64"},
		MinKubeVersion:         "1.17.0",
		DefaultChannel:         "stable",
		InstallModes:           []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeAllNamespaces},

		OwnedCRDs: []definition.OwnedCRD{{
			Name:        "maniladrivers.csi.openshift.io",
			Version:     manilav1alpha1.GroupVersion.Version,
			Kind:        manilav1alpha1.Kind,
			DisplayName: "Manila Driver",
			Description: "Deploys and configures the OpenStack Manila CSI driver. Its name must be cluster.",
			Manifest:    manilacrd.ManilaDrivers,
			Example: &manilav1alpha1.ManilaDriver{
				TypeMeta:   metav1.TypeMeta{APIVersion: manilav1alpha1.GroupVersion.String(), Kind: manilav1alpha1.Kind},
				ObjectMeta: metav1.ObjectMeta{Name: manilav1alpha1.Name},
				Spec:       manilav1alpha1.ManilaDriverSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			},
		}},

		ServiceAccount: manila.OperatorName,
		// The operator runs its driver in another namespace that it creates, and reads the
		// OpenStack credentials from kube-system, so its permissions are cluster-wide.
		ClusterRules: rules.Join(
			rules.OwnCR(manilav1alpha1.GroupVersion.Group, "maniladrivers"),
			rules.Operands(),
			rules.ClusterOperands(),
			rules.Provisioner(),
			rules.Snapshotter(),
			[]rbacv1.PolicyRule{
				definition.Rule([]string{""}, []string{"namespaces"}, definition.ReadWrite),
				rules.CredentialsRequests(),
				rules.UseSCC("privileged"),
			},
		),

		DeploymentName: manila.OperatorName,
		Deployment:     deployment,
		Releases: []definition.Release{{
			Version: "4.5.0", Channels: []string{"stable"}, Maturity: "stable",
			CreatedAt:     "2020-07-13T00:00:00Z",
			OperatorImage: "quay.io/openshift/origin-csi-driver-manila-operator:4.5",
			Images: []definition.Image{
				{Name: "csi-external-provisioner", Env: "EXTERNAL_PROVISIONER_IMAGE", Ref: "quay.io/openshift/origin-csi-external-provisioner:4.5"},
				{Name: "csi-external-snapshotter", Env: "EXTERNAL_SNAPSHOTTER_IMAGE", Ref: "quay.io/openshift/origin-csi-external-snapshotter:4.5"},
				{Name: "csi-driver-manila", Env: "CSI_DRIVER_MANILA_IMAGE", Ref: "quay.io/openshift/origin-csi-driver-manila:4.5"},
				{Name: "csi-node-driver-registrar", Env: "CSI_NODE_DRIVER_REGISTRAR_IMAGE", Ref: "quay.io/openshift/origin-csi-node-driver-registrar:4.5"},
				{Name: "csi-driver-nfs", Env: "CSI_DRIVER_NFS_IMAGE", Ref: "quay.io/openshift/origin-csi-driver-nfs:4.5"},
			},
		}},
	}
}

func deployment(r definition.Release) appsv1.DeploymentSpec {
	return definition.OperatorPod{
		Labels:         map[string]string{"name": manila.OperatorName},
		ServiceAccount: manila.OperatorName,
		Container:      manila.OperatorName,
		Image:          r.OperatorImage,
		Command:        []string{manila.OperatorName},
		Env: append([]corev1.EnvVar{
			definition.FieldEnv("WATCH_NAMESPACE", "metadata.annotations['olm.targetNamespaces']"),
			definition.FieldEnv("POD_NAME", "metadata.name"),
			{Name: "OPERATOR_NAME", Value: manila.OperatorName},
		}, r.ImageEnv()...),
		CPU:    "10m",
		Memory: "50Mi",
	}.Deployment()
}
