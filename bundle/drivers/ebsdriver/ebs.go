// Package ebs defines the OLM-era (4.5) AWS EBS CSI driver operator. csi-olm ships it so that
// clusters still running it can be migrated to the cluster-storage-operator (`csi-olm migrate cso`).
package ebsdriver

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver/ebscrd"
	ebsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver/v1alpha1"
	"github.com/csi-olm/csi-olm/bundle/drivers/icons"
	"github.com/csi-olm/csi-olm/bundle/drivers/internal/rules"
	"github.com/csi-olm/csi-olm/internal/names/ebs"
)

const description = `Operator to install and maintain the AWS EBS CSI Driver on a cluster.

**Technology Preview.** Create the ` + "`AWSEBSDriver`" + ` named ` + "`cluster`" + ` to deploy the driver into
the ` + "`" + ebs.OperandNamespace + "`" + ` namespace. From OpenShift 4.6 on, the cluster-storage-operator
manages this driver through ClusterCSIDriver ` + "`" + ebs.CSIDriver + "`" + `; run ` + "`csi-olm migrate cso --driver ebs`" + `
to hand it over.
`

// Operator returns the AWS EBS operator definition.
func Operator() definition.Operator {
	return definition.Operator{
		Package:      ebs.Package,
		CSVPrefix:    ebs.OperatorName,
		Catalog:      definition.Certified,
		DisplayName:  "AWS EBS CSI Operator",
		Summary:      "Operator to install and maintain the AWS EBS CSI Driver on a cluster.",
		Description:  description,
		Keywords:     []string{"aws", "ebs", "csi", "storage"},
		Maintainers:  []v1alpha1.Maintainer{{Name: "Red Hat", Email: "aos-storage-staff@redhat.com"}},
		Provider:     v1alpha1.AppLink{Name: "Red Hat"},
		Links:        []v1alpha1.AppLink{{Name: "Source Repository", URL: "https://github.com/openshift/aws-ebs-csi-driver-operator"}},
		IconSVG:      icons.EBS,
		Categories:   []string{"Storage"},
		Capabilities: "Basic Install",
		Repository:   "https://github.com/openshift/aws-ebs-csi-driver-operator",
		Support:      "Red Hat",

		SuggestedNamespace:     ebs.OperatorNamespace,
		InfrastructureFeatures: []definition.InfrastructureFeature{definition.CSI},
		OpenShiftVersions:      "=v4.5",
		Architectures:          []string{"amd64"},
		MinKubeVersion:         "1.17.0",
		DefaultChannel:         "preview",
		InstallModes:           []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeAllNamespaces},

		OwnedCRDs: []definition.OwnedCRD{{
			Name:        "awsebsdrivers.csi.openshift.io",
			Version:     ebsv1alpha1.GroupVersion.Version,
			Kind:        ebsv1alpha1.Kind,
			DisplayName: "AWS EBS CSI Driver",
			Description: "Deploys and configures the AWS EBS CSI driver. Its name must be cluster.",
			Manifest:    ebscrd.AWSEBSDrivers,
			Example: &ebsv1alpha1.AWSEBSDriver{
				TypeMeta:   metav1.TypeMeta{APIVersion: ebsv1alpha1.GroupVersion.String(), Kind: ebsv1alpha1.Kind},
				ObjectMeta: metav1.ObjectMeta{Name: ebsv1alpha1.Name},
				Spec:       ebsv1alpha1.AWSEBSDriverSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			},
		}},

		ServiceAccount: ebs.OperatorName,
		// The operator runs its driver in another namespace that it creates, so its operand
		// permissions are cluster-wide.
		ClusterRules: rules.Join(
			rules.OwnCR(ebsv1alpha1.GroupVersion.Group, "awsebsdrivers"),
			rules.Operands(),
			rules.ClusterOperands(),
			rules.Provisioner(),
			rules.AttacherResizer(),
			rules.Snapshotter(),
			rules.MetricsProxy(),
			[]rbacv1.PolicyRule{
				definition.Rule([]string{""}, []string{"namespaces"}, definition.ReadWrite),
				definition.Rule([]string{"monitoring.coreos.com"}, []string{"servicemonitors"}, definition.ReadWrite),
				rules.CredentialsRequests(),
				rules.UseSCC("privileged", "hostmount-anyuid"),
			},
		),

		DeploymentName: ebs.OperatorName,
		Deployment:     deployment,
		Releases: []definition.Release{{
			Version: "4.5.0", Channels: []string{"preview"}, Maturity: "preview", TechPreview: true,
			SkipRange:     ">=4.3.0 <4.5.0",
			CreatedAt:     "2020-07-13T00:00:00Z",
			OperatorImage: "quay.io/openshift/origin-aws-ebs-csi-driver-operator:4.5",
			Images: []definition.Image{
				{Name: "aws-ebs-csi-driver", Env: "DRIVER_IMAGE", Ref: "quay.io/openshift/origin-aws-ebs-csi-driver:4.5"},
				{Name: "csi-external-provisioner", Env: "PROVISIONER_IMAGE", Ref: "quay.io/openshift/origin-csi-external-provisioner:4.5"},
				{Name: "csi-external-attacher", Env: "ATTACHER_IMAGE", Ref: "quay.io/openshift/origin-csi-external-attacher:4.5"},
				{Name: "csi-external-resizer", Env: "RESIZER_IMAGE", Ref: "quay.io/openshift/origin-csi-external-resizer:4.5"},
				{Name: "csi-external-snapshotter", Env: "SNAPSHOTTER_IMAGE", Ref: "quay.io/openshift/origin-csi-external-snapshotter:4.5"},
				{Name: "csi-node-driver-registrar", Env: "NODE_DRIVER_REGISTRAR_IMAGE", Ref: "quay.io/openshift/origin-csi-node-driver-registrar:4.5"},
				{Name: "csi-livenessprobe", Env: "LIVENESS_PROBE_IMAGE", Ref: "quay.io/openshift/origin-csi-livenessprobe:4.5"},
			},
		}},
		Waivers: []definition.Waiver{{
			Contains: `channel(s) ["preview"] are not following the recommended naming convention`,
			Reason:   "the 4.5 EBS operator was a tech preview, published in the preview channel (docs/architecture.md#the-three-drivers)",
		}},
	}
}

func deployment(r definition.Release) appsv1.DeploymentSpec {
	return definition.OperatorPod{
		Labels:         map[string]string{"name": ebs.OperatorName},
		ServiceAccount: ebs.OperatorName,
		Container:      ebs.OperatorName,
		Image:          r.OperatorImage,
		Args:           []string{"start"},
		Env: append([]corev1.EnvVar{
			{Name: "OPERATOR_NAME", Value: ebs.OperatorName},
			definition.FieldEnv("POD_NAME", "metadata.name"),
		}, r.ImageEnv()...),
		CPU:           "10m",
		Memory:        "50Mi",
		PriorityClass: "system-cluster-critical",
	}.Deployment()
}
