// Package communityefs defines the community aws-efs-operator as it exists in the field
// (docs/architecture.md#the-community-efs-operator): the releases that clusters upgrade from. It is published only in the community
// catalog; csi-olm reproduces it so that the upgrade to the supported operator is tested for real.
package communityefs

import (
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers/communityefs/communityefscrd"
	communityefsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/communityefs/v1alpha1"
	"github.com/csi-olm/csi-olm/bundle/drivers/icons"
	"github.com/csi-olm/csi-olm/internal/names/efs"
)

const description = `Management of AWS EFS read-write-many mounts.

Create a SharedVolume naming an EFS file system and access point; the operator creates a
PersistentVolume and a PersistentVolumeClaim ` + "`pvc-<name>`" + ` in the SharedVolume's namespace.
The operator also installs the AWS EFS CSI driver node DaemonSet, CSIDriver and StorageClass ` + "`efs-sc`" + `.
`

// Operator returns the community EFS operator definition.
func Operator() definition.Operator {
	return definition.Operator{
		Package:      efs.Package,
		CSVPrefix:    efs.CommunityOperatorName,
		Catalog:      definition.Community,
		DisplayName:  "AWS EFS Operator",
		Summary:      "Management of AWS EFS read-write-many mounts.",
		Description:  description,
		Keywords:     []string{"kubernetes", "openshift", "multi-cluster", "cluster", "EFS"},
		Provider:     v1alpha1.AppLink{Name: "Red Hat, Inc"},
		Links:        []v1alpha1.AppLink{{Name: "Source Repository", URL: "https://github.com/openshift/aws-efs-operator"}},
		IconSVG:      icons.EFS,
		Categories:   []string{"Storage"},
		Capabilities: "Full Lifecycle",
		Repository:   "https://github.com/openshift/aws-efs-operator",
		Support:      "Red Hat",

		// AllNamespaces operators land in openshift-operators.
		SuggestedNamespace:     "openshift-operators",
		InfrastructureFeatures: []definition.InfrastructureFeature{definition.CSI},
		OpenShiftVersions:      "v4.5",
		Architectures:          []string{"amd64"},
		MinKubeVersion:         "1.16.0",
		DefaultChannel:         "stable",
		InstallModes:           []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeAllNamespaces},

		OwnedCRDs: []definition.OwnedCRD{{
			Name:        efs.SharedVolumeCRD,
			Version:     "v1alpha1",
			Kind:        "SharedVolume",
			DisplayName: "Shared Volume",
			Description: "An EFS access point exposed as a PersistentVolumeClaim.",
			Manifest:    communityefscrd.SharedVolumes,
			Example: &communityefsv1alpha1.SharedVolume{
				TypeMeta:   metav1.TypeMeta{APIVersion: "aws-efs.managed.openshift.io/v1alpha1", Kind: "SharedVolume"},
				ObjectMeta: metav1.ObjectMeta{Name: "my-shared-volume", Namespace: "my-app"},
				Spec:       communityefsv1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123cdef", AccessPointID: "fsap-0123456789abcdef"},
			},
		}},

		ServiceAccount: efs.CommunityOperatorName,
		// The field's ClusterRole used wildcards; this is the same access listed verb by verb.
		ClusterRules: []rbacv1.PolicyRule{
			definition.Rule([]string{""}, []string{"persistentvolumes", "persistentvolumeclaims", "serviceaccounts"}, definition.ReadWrite),
			definition.Rule([]string{""}, []string{"events"}, []string{"create", "patch"}),
			definition.Rule([]string{""}, []string{"pods"}, []string{"get"}),
			definition.Rule([]string{"apps"}, []string{"daemonsets"}, definition.ReadWrite),
			definition.Rule([]string{"apps"}, []string{"deployments", "replicasets"}, []string{"get"}),
			definition.Rule([]string{"apps"}, []string{"deployments/finalizers"}, []string{"update"}, efs.CommunityOperatorName),
			definition.Rule([]string{"monitoring.coreos.com"}, []string{"servicemonitors"}, []string{"get", "create"}),
			definition.Rule([]string{"aws-efs.managed.openshift.io"}, []string{"sharedvolumes"}, []string{"get", "list", "watch", "update", "patch"}),
			definition.Rule([]string{"aws-efs.managed.openshift.io"}, []string{"sharedvolumes/status"}, []string{"get", "update", "patch"}),
			definition.Rule([]string{"aws-efs.managed.openshift.io"}, []string{"sharedvolumes/finalizers"}, []string{"update"}),
			definition.Rule([]string{"storage.k8s.io"}, []string{"csidrivers", "storageclasses"}, definition.ReadWrite),
			definition.Rule([]string{"security.openshift.io"}, []string{"securitycontextconstraints"}, append([]string{"use"}, definition.ReadWrite...)),
			definition.Rule([]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, definition.ReadOnly),
		},

		Deprecation: "The community aws-efs-operator is deprecated. Switch this Subscription's spec.source to the " +
			"certified catalog (same package and channel): the supported AWS EFS CSI Driver Operator replaces it and, once " +
			"ClusterCSIDriver efs.csi.aws.com is created, adopts the running driver in place. SharedVolumes keep working.",

		DeploymentName: efs.CommunityOperatorName,
		Deployment:     deployment,
		Releases: []definition.Release{
			release("0.0.6", "", "2020-06-02T00:00:00Z"),
			release("0.0.7", "aws-efs-operator.v0.0.6", "2020-08-18T00:00:00Z"),
			release("0.0.8", "aws-efs-operator.v0.0.7", "2021-02-09T00:00:00Z"),
		},
	}
}

// release is one community release; the driver images were built into the operator, so they
// are listed for mirroring but handed to no environment variable.
func release(version, replaces, createdAt string) definition.Release {
	return definition.Release{
		Version: version, Channels: []string{"stable"}, Replaces: replaces, Maturity: "alpha",
		CreatedAt:     createdAt,
		OperatorImage: "quay.io/app-sre/aws-efs-operator:v" + version,
		Images: []definition.Image{
			{Name: "aws-efs-csi-driver", Ref: "docker.io/amazon/aws-efs-csi-driver:v1.0.0"},
			{Name: "csi-node-driver-registrar", Ref: "quay.io/k8scsi/csi-node-driver-registrar:v1.3.0"},
			{Name: "csi-livenessprobe", Ref: "quay.io/k8scsi/livenessprobe:v2.0.0"},
		},
	}
}

func deployment(r definition.Release) appsv1.DeploymentSpec {
	return definition.OperatorPod{
		Labels:         map[string]string{"name": efs.CommunityOperatorName},
		ServiceAccount: efs.CommunityOperatorName,
		Container:      efs.CommunityOperatorName,
		Image:          r.OperatorImage,
		Command:        []string{efs.CommunityOperatorName},
		Env: []corev1.EnvVar{
			{Name: "WATCH_NAMESPACE", Value: ""},
			definition.FieldEnv("POD_NAME", "metadata.name"),
			definition.FieldEnv("OPERATOR_NAMESPACE", "metadata.namespace"),
			{Name: "OPERATOR_NAME", Value: efs.CommunityOperatorName},
		},
		CPU:    "10m",
		Memory: "64Mi",
	}.Deployment()
}
