// Package efs defines the supported AWS EFS CSI driver operator and its release history.
//
// It is published in package aws-efs-operator, the community operator's package, so that a
// community install upgrades to it by switching only its Subscription's source (docs/architecture.md#upgrades).
package efs

import (
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	d "github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers/icons"
	"github.com/csi-olm/csi-olm/bundle/drivers/internal/rules"
	names "github.com/csi-olm/csi-olm/internal/names/efs"
	svv1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	svcrd "github.com/csi-olm/csi-olm/sharedvolume/crd"
)

const description = `The AWS EFS CSI Driver Operator installs and manages the
[AWS EFS CSI driver](https://github.com/kubernetes-sigs/aws-efs-csi-driver), which mounts
Amazon Elastic File System (EFS) volumes as ReadWriteMany persistent volumes.

## Enable the driver
The operator does nothing until a cluster administrator creates its configuration object:

` + "```yaml" + `
apiVersion: operator.openshift.io/v1
kind: ClusterCSIDriver
metadata:
  name: efs.csi.aws.com
spec:
  managementState: Managed
` + "```" + `

It then deploys the controller (dynamic provisioning through EFS access points) and the node
DaemonSet into its own namespace, and reports Available, Progressing and Degraded conditions on
the ClusterCSIDriver.

## Shared volumes for app teams
App teams that may not create PersistentVolumes create a SharedVolume naming an EFS file system and
access point, and get a bound PersistentVolumeClaim ` + "`pvc-<name>`" + ` in their namespace. The API is the
one of the community aws-efs-operator, so existing SharedVolumes keep working.

## Upgrading from the community aws-efs-operator
Edit only ` + "`spec.source`" + ` of the existing Subscription to this catalog. The running driver is adopted in
place, by name, once the ClusterCSIDriver above is created; volumes stay mounted throughout.

## Uninstalling
Deleting the ClusterCSIDriver removes the driver only when no EFS PersistentVolume is left.
Removing the operator itself leaves the driver and every volume working.
`

// Operator returns the supported EFS operator definition.
func Operator() d.Operator {
	return d.Operator{
		Package:      names.Package,
		CSVPrefix:    names.OperatorName,
		Catalog:      d.Certified,
		DisplayName:  "AWS EFS CSI Driver Operator",
		Summary:      "Install and manage the AWS EFS CSI driver, and give app teams shared EFS volumes.",
		Description:  description,
		Keywords:     []string{"storage", "efs", "csi", "aws", "rwx", "shared volume"},
		Maintainers:  []v1alpha1.Maintainer{{Name: "csi-olm maintainers", Email: "maintainers@csi-olm.io"}},
		Provider:     v1alpha1.AppLink{Name: "csi-olm"},
		Links:        links(),
		IconSVG:      icons.EFS,
		Categories:   []string{"Storage"},
		Capabilities: "Full Lifecycle",
		Repository:   "https://github.com/csi-olm/csi-olm",
		Support:      "csi-olm",

		SuggestedNamespace:     "openshift-cluster-csi-drivers",
		InfrastructureFeatures: []d.InfrastructureFeature{d.Disconnected, d.ProxyAware, d.TokenAuthAWS, d.CSI},
		OpenShiftVersions:      "v4.9",
		Architectures:          []string{"amd64", "arm64"},
		MinKubeVersion:         "1.22.0",
		DefaultChannel:         "stable",
		InstallModes:           []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeAllNamespaces},

		OwnedCRDs: []d.OwnedCRD{{
			Name:        "sharedvolumes.aws-efs.managed.openshift.io",
			Version:     svv1alpha1.GroupVersion.Version,
			Kind:        svv1alpha1.Kind,
			DisplayName: "Shared Volume",
			Description: "A PersistentVolume and PersistentVolumeClaim for one access point of an AWS EFS file system.",
			Manifest:    svcrd.SharedVolumes,
			Example: &svv1alpha1.SharedVolume{
				TypeMeta:   metav1.TypeMeta{APIVersion: svv1alpha1.GroupVersion.String(), Kind: svv1alpha1.Kind},
				ObjectMeta: metav1.ObjectMeta{Name: "my-shared-volume", Namespace: "my-app"},
				Spec:       svv1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123cdef", AccessPointID: "fsap-0123456789abcdef"},
			},
		}},
		NativeAPIs: []metav1.GroupVersionKind{{Group: "operator.openshift.io", Version: "v1", Kind: "ClusterCSIDriver"}},

		ServiceAccount: names.OperatorName,
		ClusterRules: rules.Join(
			rules.OwnCR("operator.openshift.io", "clustercsidrivers"),
			rules.ClusterOperands(),
			rules.Provisioner(),
			rules.MetricsProxy(),
			[]rbacv1.PolicyRule{
				d.Rule([]string{"config.openshift.io"}, []string{"infrastructures", "proxies", "featuregates", "clusterversions", "apiservers"}, d.ReadOnly),
				d.Rule([]string{"operator.openshift.io"}, []string{"cloudcredentials"}, d.ReadOnly),
				rules.CredentialsRequests(),
				rules.UseSCC("privileged"),
				// The community operator's SCC is removed once its driver is adopted.
				d.Rule([]string{"security.openshift.io"}, []string{"securitycontextconstraints"}, []string{"get", "delete"}, names.CommunitySCC),
				// SharedVolumes create claims in the app teams' namespaces; the allow-list is
				// read from namespace annotations.
				d.Rule([]string{""}, []string{"persistentvolumeclaims"}, []string{"create", "delete"}),
				d.Rule([]string{""}, []string{"namespaces"}, d.ReadOnly),
				d.Rule([]string{svv1alpha1.GroupVersion.Group}, []string{"sharedvolumes"}, []string{"get", "list", "watch", "update", "patch"}),
				d.Rule([]string{svv1alpha1.GroupVersion.Group}, []string{"sharedvolumes/status"}, []string{"get", "update", "patch"}),
				d.Rule([]string{svv1alpha1.GroupVersion.Group}, []string{"sharedvolumes/finalizers"}, []string{"update"}),
				// Community driver objects carry an ownerReference to this CRD; its UID
				// identifies them for adoption.
				d.Rule([]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, []string{"get"}, "sharedvolumes.aws-efs.managed.openshift.io"),
			},
		),
		NamespaceRules: rules.Join(rules.Operands(), []rbacv1.PolicyRule{
			// Granted on to the monitoring stack, which discovers the metrics endpoints.
			d.Rule([]string{""}, []string{"endpoints"}, d.ReadOnly),
			d.Rule([]string{"monitoring.coreos.com"}, []string{"servicemonitors", "prometheusrules"}, d.ReadWrite),
			d.Rule([]string{"policy"}, []string{"poddisruptionbudgets"}, d.ReadWrite),
		}),

		DeploymentName: names.OperatorName,
		Deployment:     deployment,
		Releases: []d.Release{
			{
				Version: "4.9.0", Channels: []string{"preview"}, Maturity: "preview", TechPreview: true,
				CreatedAt:     "2026-09-01T00:00:00Z",
				OperatorImage: "quay.io/csi-olm/aws-efs-csi-driver-operator@sha256:bd712e70c839ca782176dac345b9d788f5201698210608818d198b11c9123fd7",
				Images: images(
					"a1f82a9c4bc68ae83579264763027c86c8e751262d80f942aba1946b418974ca",
					"50b6b1cf6d6e1dbd6981a805e6168cbbdcb11cb375f437a43a57ab8c1997234b",
					"959ba003622b678783207286b4ecb409d71603ea19ab16cb4bf5a2dee9e89940",
					"4f7a20e07f7d6985cfcfb4e37e7c973c58d3a77785dc27669d4d36175b767446",
					"5d2538c2f294523fbf4a63f37d49276c50a414c163feb983bf1384db7f62df8f",
				),
			},
			{
				// The first GA release upgrades every community version and the tech preview.
				Version: "4.10.0", Channels: []string{"stable"}, Maturity: "stable",
				Replaces: "aws-efs-operator.v0.0.8", SkipRange: ">=0.0.6 <4.10.0",
				CreatedAt:     "2026-10-15T00:00:00Z",
				OperatorImage: "quay.io/csi-olm/aws-efs-csi-driver-operator@sha256:a9f4ced4f34d0a9dd50ecce142194bd755596fc530f28852ef991610d149767a",
				Images: images(
					"3364d86c0e3568d7ce158fc76ec5f679549b3a2d10cbda4acdd0ad65ac906f0f",
					"0141b8d0b36fc4e7cb3f87e94d848ccc97372cfed99423f12e9951b64817adf9",
					"1bcc38c8a9596e43571431f289e162330535018f936228ccc3342f16feff1a3c",
					"4a58fb0d1c8bc41b61d6ca1a66e55b75405e3dd66ba22423a67817f5e3604500",
					"0dda6633db87e2aef614091cbfc3e00043b90a075b153db53468814fcba5dac6",
				),
			},
			{
				// The head keeps a direct edge from every community version, so a source
				// switch lands on it in one step.
				Version: "4.11.0", Channels: []string{"stable"}, Maturity: "stable",
				Replaces: "aws-efs-csi-driver-operator.v4.10.0", SkipRange: ">=0.0.6 <4.11.0",
				CreatedAt:     "2026-11-20T00:00:00Z",
				OperatorImage: "quay.io/csi-olm/aws-efs-csi-driver-operator@sha256:16635e9412c3d40d691bcba8bf9d0959a8d322e77b68fb0a86df862df76713d0",
				Images: images(
					"a6c04a2175522e05b640bba3146f6244dd8b7344c7f4cfd62a2277efed91b57d",
					"37b02d60ce1f110082b532bc309fb0b0c988c2ae203c5ee5dd98a182ef366805",
					"11e06676a426026701b2bfa8ef5af980fb686e8bc698d89590f973656ba99f04",
					"9b388e672374b1fea07ab096360993433261a327a613f8841bed7ec46226a89a",
					"563673ed19095ea05e6664b260a50408fd824b58f5de6233ae17550564042dbd",
				),
			},
		},
		Waivers: []d.Waiver{{
			Contains: `channel(s) ["preview"] are not following the recommended naming convention`,
			Versions: []string{"4.9.0"},
			Reason:   "tech-preview releases go in the preview channel, as OpenShift's storage operators do (docs/architecture.md#the-three-drivers)",
		}},
	}
}

func links() []v1alpha1.AppLink {
	return []v1alpha1.AppLink{
		{Name: "Source Repository", URL: "https://github.com/csi-olm/csi-olm"},
		{Name: "AWS EFS CSI driver", URL: "https://github.com/kubernetes-sigs/aws-efs-csi-driver"},
	}
}

// images lists a release's operand images from their digests, in the order driver,
// provisioner, node-driver-registrar, livenessprobe, kube-rbac-proxy.
func images(driver, provisioner, registrar, liveness, rbacProxy string) []d.Image {
	return []d.Image{
		{Name: "aws-efs-csi-driver", Env: names.DriverImageEnv, Ref: "quay.io/csi-olm/aws-efs-csi-driver@sha256:" + driver},
		{Name: "csi-external-provisioner", Env: names.ProvisionerImageEnv, Ref: "registry.k8s.io/sig-storage/csi-provisioner@sha256:" + provisioner},
		{Name: "csi-node-driver-registrar", Env: names.RegistrarImageEnv, Ref: "registry.k8s.io/sig-storage/csi-node-driver-registrar@sha256:" + registrar},
		{Name: "csi-livenessprobe", Env: names.LivenessProbeImageEnv, Ref: "registry.k8s.io/sig-storage/livenessprobe@sha256:" + liveness},
		{Name: "kube-rbac-proxy", Env: names.KubeRBACProxyImageEnv, Ref: "quay.io/brancz/kube-rbac-proxy@sha256:" + rbacProxy},
	}
}

func deployment(r d.Release) appsv1.DeploymentSpec {
	return d.OperatorPod{
		Labels:         map[string]string{"app": names.OperatorName},
		ServiceAccount: names.OperatorName,
		Container:      names.OperatorName,
		Image:          r.OperatorImage,
		Args:           []string{"start", "-v=2"},
		Env: append([]corev1.EnvVar{
			d.FieldEnv("POD_NAME", "metadata.name"),
			// The operator deploys the driver into its own namespace.
			d.FieldEnv("OPERATOR_NAMESPACE", "metadata.namespace"),
			{Name: "OPERATOR_NAME", Value: names.OperatorName},
			{Name: "OPERATOR_IMAGE_VERSION", Value: r.Version},
			{Name: "OPERAND_IMAGE_VERSION", Value: r.Version},
		}, r.ImageEnv()...),
		CPU:           "10m",
		Memory:        "50Mi",
		PriorityClass: "system-cluster-critical",
		ControlPlane:  true,
	}.Deployment()
}
