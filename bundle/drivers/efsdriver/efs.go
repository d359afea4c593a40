// Package efs defines the supported AWS EFS CSI driver operator and its release history.
//
// It is published in package aws-efs-operator, the community operator's package, so that a
// community install upgrades to it by switching only its Subscription's source (docs/architecture.md#upgrades).
package efsdriver

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
	"github.com/csi-olm/csi-olm/internal/names/efs"
	fencev1alpha1 "github.com/csi-olm/csi-olm/operator/api/v1alpha1"
	"github.com/csi-olm/csi-olm/operator/fencecrd"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
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

OLM adds SharedVolumes to the cluster's aggregated ` + "`admin`" + ` and ` + "`edit`" + ` roles, so every user who
may edit a project may create SharedVolumes in it, and the operator, not that user, creates the
PersistentVolume. By default a SharedVolume may name any EFS file system and access point. A cluster
administrator restricts that per namespace with annotations, which project admins and editors cannot
change: a comma-separated list of the file systems, and optionally of the access points, that the
namespace's SharedVolumes may name:

` + "```sh" + `
oc annotate namespace my-app aws-efs.managed.openshift.io/allowed-file-systems=fs-0123cdef
oc annotate namespace my-app aws-efs.managed.openshift.io/allowed-access-points=fsap-0123456789abcdef
` + "```" + `

An empty list allows nothing. To keep SharedVolumes to chosen namespaces, give every other namespace
the empty list, including namespaces created later (for example through the project request
template): a namespace without the annotation allows every file system.

` + "```sh" + `
oc annotate namespace other-app aws-efs.managed.openshift.io/allowed-file-systems=
` + "```" + `

A SharedVolume naming a file system or access point that its namespace does not allow becomes
Failed (` + "`FileSystemNotAllowed`" + `) and gets no volume; a volume made before the namespace was
annotated is not removed.

## Upgrading from the community aws-efs-operator
Edit only ` + "`spec.source`" + ` of the existing Subscription to this catalog. The running driver is adopted in
place, by name, once the ClusterCSIDriver above is created; volumes stay mounted throughout.

## Dynamic provisioning
The operator creates no StorageClass: EFS provisions only from a class that names a file system.
To provision volumes as EFS access points, create one:

` + "```yaml" + `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: efs-sc
provisioner: efs.csi.aws.com
parameters:
  provisioningMode: efs-ap
  fileSystemId: fs-0123456789abcdef0
  directoryPerms: "700"
` + "```" + `

Earlier releases, and the community aws-efs-operator, created ` + "`efs-sc`" + ` without parameters, so a claim
on it failed at the provisioner. The operator deletes that class; a class with parameters is
left alone. Claims of SharedVolumes still name ` + "`efs-sc`" + ` and keep binding, because they name their volume.

## Clusters with AWS STS (short-lived credentials)
On a cluster whose cloud credentials are in manual mode with AWS Security Token Service:

1. Save the operator's CredentialsRequest
   ([operator/assets/credentials.yaml](https://github.com/csi-olm/csi-olm/blob/main/operator/assets/credentials.yaml))
   in a directory and create its IAM role with
   ` + "`ccoctl aws create-iam-roles --name=<name> --region=<region> --credentials-requests-dir=<dir> --identity-provider-arn=<OIDC provider ARN>`" + `.
2. Install the operator with the role's ARN: OperatorHub asks for it, or set ` + "`ROLEARN`" + ` in the
   Subscription's ` + "`spec.config.env`" + `.
3. The operator adds the role and the service account token path to its CredentialsRequest; the
   cloud-credential operator writes Secret ` + "`aws-efs-cloud-credentials`" + `, which the driver's controller
   reads together with its projected service account token (audience ` + "`openshift`" + `).
4. For One Zone file systems, the node plugin needs credentials of its own, to find the mount
   target of each node's zone: create a role from the node's CredentialsRequest
   ([operator/assets/credentials_node.yaml](https://github.com/csi-olm/csi-olm/blob/main/operator/assets/credentials_node.yaml))
   the same way and set its ARN as ` + "`NODE_ROLEARN`" + ` in the Subscription's ` + "`spec.config.env`" + `; the
   cloud-credential operator then writes Secret ` + "`node-aws-efs-cloud-credentials`" + `.

## Deleting dynamically provisioned volumes
Deleting a PersistentVolume that the driver provisioned deletes its EFS access point, not the
directory the access point exposed: the data stays in the file system, and is billed, until an
administrator deletes it. Deleting that directory would need the controller to mount the file
system, which takes a privileged controller pod; this operator runs only the node DaemonSet
privileged.

## Uninstalling
Deleting the ClusterCSIDriver, or setting it Removed, removes the driver only when no pod uses an
EFS volume: the conditions and an event name the pods that hold it back, and volumes no pod uses
stay, with their data. While it waits, EFS volumes are provisioned as usual; setting the
ClusterCSIDriver back to Managed keeps the driver (a deletion cannot be undone: create the
ClusterCSIDriver again once it is gone). For the seconds of the removal itself, the API server
refuses new EFS PersistentVolumes and new pods on EFS claims (the ValidatingAdmissionPolicy
aws-efs-csi-driver-removal-fence, Kubernetes 1.30 or later, over RemovalFences the operator
writes in its namespace for those seconds only).
Removing the operator itself leaves the driver and every volume working.
`

// operatorPodSelector selects the operator's pod: the Deployment's selector, the metrics
// Service's and the NetworkPolicy's.
var operatorPodSelector = map[string]string{"app": efs.OperatorName}

// suggestedNamespace is where OpenShift's storage operators run.
const suggestedNamespace = "openshift-cluster-csi-drivers"

// Operator returns the supported EFS operator definition.
func Operator() definition.Operator {
	// Each release is the build for one OpenShift minor, as OpenShift's own storage operators
	// ship (docs/architecture.md#one-catalog-per-openshift-minor).
	releases := []definition.Release{
		release("4.9", "2026-09-01T00:00:00Z"),
		release("4.10", "2026-10-15T00:00:00Z"),
		release("4.11", "2026-11-20T00:00:00Z"),
	}
	keepMinorChannels(releases)
	return definition.Operator{
		Package:      efs.Package,
		CSVPrefix:    efs.OperatorName,
		Catalog:      definition.Certified,
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

		SuggestedNamespace: "openshift-cluster-csi-drivers",
		// kube-rbac-proxy serves the driver's metrics with the cluster's TLS profile (library-go
		// fills ${TLS_CIPHER_SUITES} and ${TLS_MIN_VERSION} from APIServer/cluster).
		InfrastructureFeatures: []definition.InfrastructureFeature{definition.Disconnected, definition.ProxyAware, definition.TLSProfiles, definition.TokenAuthAWS, definition.CSI},
		Architectures:          []string{"amd64", "arm64"},
		DefaultChannel:         "stable",
		InstallModes:           []v1alpha1.InstallModeType{v1alpha1.InstallModeTypeAllNamespaces},

		OwnedCRDs: []definition.OwnedCRD{{
			Name:        "sharedvolumes.aws-efs.managed.openshift.io",
			Version:     sharedvolumev1alpha1.GroupVersion.Version,
			Kind:        sharedvolumev1alpha1.Kind,
			DisplayName: "Shared Volume",
			Description: "A PersistentVolume and PersistentVolumeClaim for one access point of an AWS EFS file system.",
			Manifest:    crd.SharedVolumes,
			Example: &sharedvolumev1alpha1.SharedVolume{
				TypeMeta:   metav1.TypeMeta{APIVersion: sharedvolumev1alpha1.GroupVersion.String(), Kind: sharedvolumev1alpha1.Kind},
				ObjectMeta: metav1.ObjectMeta{Name: "my-shared-volume", Namespace: "my-app"},
				Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123cdef", AccessPointID: "fsap-0123456789abcdef"},
			},
		}, {
			Name:        efs.RemovalFenceCRD,
			Version:     fencev1alpha1.GroupVersion.Version,
			Kind:        fencev1alpha1.Kind,
			DisplayName: "Removal Fence",
			Description: "Written by the operator alone, for the seconds in which it removes the driver: the claims no new pod may use.",
			Manifest:    fencecrd.RemovalFences,
			Internal:    true,
		}},
		NativeAPIs: []metav1.GroupVersionKind{{Group: "operator.openshift.io", Version: "v1", Kind: "ClusterCSIDriver"}},
		InitializationResource: &operatorv1.ClusterCSIDriver{
			TypeMeta:   metav1.TypeMeta{APIVersion: operatorv1.GroupVersion.String(), Kind: "ClusterCSIDriver"},
			ObjectMeta: metav1.ObjectMeta{Name: efs.CRName},
			Spec:       operatorv1.ClusterCSIDriverSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
		},

		ServiceAccount: efs.OperatorName,
		ClusterRules: rules.Join(
			rules.OwnCR("operator.openshift.io", "clustercsidrivers"),
			rules.ClusterOperands(),
			rules.Provisioner(),
			rules.MetricsProxy(),
			[]rbacv1.PolicyRule{
				rules.DelegatedAuthentication(),
				definition.Rule([]string{"config.openshift.io"}, []string{"infrastructures", "proxies", "featuregates", "clusterversions", "apiservers"}, definition.ReadOnly),
				definition.Rule([]string{"operator.openshift.io"}, []string{"cloudcredentials"}, definition.ReadOnly),
				rules.CredentialsRequests(),
				rules.UseSCC("privileged"),
				// The community operator's SCC is removed once its driver is adopted.
				definition.Rule([]string{"security.openshift.io"}, []string{"securitycontextconstraints"}, []string{"get", "delete"}, efs.CommunitySCC),
				// Any other node plugin of the driver is found, never touched; the CSINodes it
				// also reads are in the provisioner's rules the operator holds.
				definition.Rule([]string{"apps"}, []string{"daemonsets"}, []string{"list"}),
				// SharedVolumes create claims in the app teams' namespaces; the allow-list is
				// read from namespace annotations.
				definition.Rule([]string{""}, []string{"persistentvolumeclaims"}, []string{"create", "delete"}),
				definition.Rule([]string{""}, []string{"namespaces"}, definition.ReadOnly),
				definition.Rule([]string{sharedvolumev1alpha1.GroupVersion.Group}, []string{"sharedvolumes"}, []string{"get", "list", "watch", "update", "patch"}),
				definition.Rule([]string{sharedvolumev1alpha1.GroupVersion.Group}, []string{"sharedvolumes/status"}, []string{"get", "update", "patch"}),
				definition.Rule([]string{sharedvolumev1alpha1.GroupVersion.Group}, []string{"sharedvolumes/finalizers"}, []string{"update"}),
				// The driver is removed only once no pod uses an EFS volume: while a removal is
				// asked for, and only then, the operator watches the unfinished pods.
				definition.Rule([]string{""}, []string{"pods"}, []string{"list", "watch"}),
				// The removal fence (a ValidatingAdmissionPolicy and its binding) refuses new uses
				// of EFS volumes while the driver is removed. Creating one cannot be limited by name.
				// The API server lets only a user who may read every RemovalFence create a policy
				// whose parameters they are; the operator writes them in its namespace alone.
				definition.Rule([]string{"admissionregistration.k8s.io"}, []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, []string{"create"}),
				definition.Rule([]string{"admissionregistration.k8s.io"}, []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, []string{"get", "update", "patch"}, efs.RemovalFence),
				definition.Rule([]string{fencev1alpha1.GroupVersion.Group}, []string{fencev1alpha1.Resource}, []string{"get"}),
				// New SharedVolumes get their finalizer from a MutatingAdmissionPolicy (one
				// write less each) while OLM's ClusterRole for this CSV exists: the API server
				// lets the operator bind it to ClusterRoles, which it may read already.
				definition.Rule([]string{"admissionregistration.k8s.io"}, []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}, []string{"create"}),
				definition.Rule([]string{"admissionregistration.k8s.io"}, []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}, []string{"patch"}, efs.SharedVolumeFinalizerPolicy),
				// Community driver objects carry an ownerReference to this CRD; its UID
				// identifies them for adoption.
				definition.Rule([]string{"apiextensions.k8s.io"}, []string{"customresourcedefinitions"}, []string{"get"}, "sharedvolumes.aws-efs.managed.openshift.io"),
			},
		),
		NamespaceRules: rules.Join(rules.Operands(), []rbacv1.PolicyRule{
			// Granted on to the monitoring stack, which discovers the metrics endpoints.
			definition.Rule([]string{""}, []string{"endpoints"}, definition.ReadOnly),
			definition.Rule([]string{"monitoring.coreos.com"}, []string{"servicemonitors", "prometheusrules"}, definition.ReadWrite),
			// The removal fence's parameters, written for the seconds of a removal.
			definition.Rule([]string{fencev1alpha1.GroupVersion.Group}, []string{fencev1alpha1.Resource}, []string{"list", "create", "patch", "delete"}),
			// The controller's PodDisruptionBudget.
			definition.Rule([]string{"policy"}, []string{"poddisruptionbudgets"}, definition.ReadWrite),
		}),

		Manifests:         append(metricsManifests(suggestedNamespace), networkPolicy(operatorPodSelector)),
		ClusterMonitoring: true,
		DeploymentName:    efs.OperatorName,
		Deployment:        deployment,
		Releases:          releases,
		Waivers: append(minorChannelWaivers(releases), definition.Waiver{
			// The warning names no API; the definition's own check gives every CRD that is not
			// internal an example.
			Contains: "provided API should have an example annotation",
			Reason:   "RemovalFence is written by the operator alone and listed in operators.operatorframework.io/internal-objects: an example would invite users to create one",
		}),
	}
}

// minorChannelWaivers accept the operator-framework validator's warning on the channels named
// after OpenShift minors, which its naming advice (stable, fast, candidate...) does not know. The
// warning lists the channels in no fixed order, so the waiver names none; the definition's own
// check holds channels named like a minor to the release's minor and earlier ones.
func minorChannelWaivers(releases []definition.Release) []definition.Waiver {
	w := definition.Waiver{
		Contains: "are not following the recommended naming convention",
		Reason:   "OpenShift's storage operators name a channel after the OpenShift minor, beside stable (docs/architecture.md#one-catalog-per-openshift-minor)",
	}
	for _, r := range releases {
		w.Versions = append(w.Versions, r.Version)
	}
	return []definition.Waiver{w}
}

// keepMinorChannels puts each release also in the channels named after the earlier releases'
// minors. A Subscription pinned to channel 4.9 would otherwise no longer resolve once the
// cluster upgrades to 4.10, whose index has no channel 4.9: `catalog cluster-upgrade` reports
// that install stranded. In each index the minor's release heads them all.
func keepMinorChannels(releases []definition.Release) {
	for i := range releases {
		for j := i - 1; j >= 0; j-- {
			releases[i].Channels = append(releases[i].Channels, releases[j].OpenShift)
		}
	}
}

// release is the operator's build for an OpenShift minor. Its bundle goes only into that minor's
// index, where it is the head of channel stable (the default) and of the channel named after the
// minor, as in OpenShift's storage operators. Its skipRange takes every older release there in
// one step, the community ones included: a cluster upgraded from the previous minor, and a
// community install whose Subscription switches its source.
func release(minor, createdAt string) definition.Release {
	version := minor + ".0"
	return definition.Release{
		Version: version, OpenShift: minor, Channels: []string{"stable", minor}, Maturity: "stable",
		SkipRange:     ">=0.0.6 <" + version,
		CreatedAt:     createdAt,
		OperatorImage: "quay.io/csi-olm/aws-efs-csi-driver-operator:v" + version,
		Images:        images("v"+version, minor),
	}
}

func links() []v1alpha1.AppLink {
	return []v1alpha1.AppLink{
		{Name: "Source Repository", URL: "https://github.com/csi-olm/csi-olm"},
		{Name: "AWS EFS CSI driver", URL: "https://github.com/kubernetes-sigs/aws-efs-csi-driver"},
	}
}

// images lists a release's operand images: the driver at its tag, and OpenShift's own sidecars
// (which OpenShift's CSI driver guide requires, built and tested with each OpenShift release) at
// the OpenShift release tag ocp. `csi-olm release` pins them by digest.
//
// ocp is the lowest minor a release runs on, not MaxOpenShiftVersion: a sidecar is an API client,
// and one built for the older minor keeps working against the next minor's API server, which
// still serves what it calls, while a sidecar of the newer minor may call an API or field the
// older minor's server lacks. OpenShift's own EFS operator does the same: each release ships the
// sidecars built in that release (openshift/csi-operator, config/aws-efs/manifests/stable/image-references)
// and, from 4.21, declares the next minor as its olm.maxOpenShiftVersion.
func images(driver, ocp string) []definition.Image {
	return []definition.Image{
		{Name: "aws-efs-csi-driver", Env: efs.DriverImageEnv, Ref: "quay.io/csi-olm/aws-efs-csi-driver:" + driver},
		{Name: "csi-external-provisioner", Env: efs.ProvisionerImageEnv, Ref: "quay.io/openshift/origin-csi-external-provisioner:" + ocp},
		{Name: "csi-node-driver-registrar", Env: efs.RegistrarImageEnv, Ref: "quay.io/openshift/origin-csi-node-driver-registrar:" + ocp},
		{Name: "csi-livenessprobe", Env: efs.LivenessProbeImageEnv, Ref: "quay.io/openshift/origin-csi-livenessprobe:" + ocp},
		{Name: "kube-rbac-proxy", Env: efs.KubeRBACProxyImageEnv, Ref: "quay.io/openshift/origin-kube-rbac-proxy:" + ocp},
	}
}

func deployment(r definition.Release) appsv1.DeploymentSpec {
	return metricsPod(definition.OperatorPod{
		Labels: operatorPodSelector,
		// The labels OpenShift's storage NetworkPolicies allow traffic by, which OpenShift's EFS
		// operator pod carries: the API server, DNS, its AWS calls' egress and its metrics port.
		PodLabels: map[string]string{
			"openshift.storage.network-policy.all-egress":             "allow",
			"openshift.storage.network-policy.dns":                    "allow",
			"openshift.storage.network-policy.api-server":             "allow",
			"openshift.storage.network-policy.operator-metrics-range": "allow",
		},
		ServiceAccount: efs.OperatorName,
		Container:      efs.OperatorName,
		Image:          r.OperatorImage,
		Args:           []string{"start", "-v=2"},
		Env: append([]corev1.EnvVar{
			definition.FieldEnv("POD_NAME", "metadata.name"),
			// The operator deploys the driver into its own namespace.
			definition.FieldEnv("OPERATOR_NAMESPACE", "metadata.namespace"),
			{Name: "OPERATOR_NAME", Value: efs.OperatorName},
			{Name: "OPERATOR_IMAGE_VERSION", Value: r.Version},
			{Name: "OPERAND_IMAGE_VERSION", Value: r.Version},
		}, r.ImageEnv()...),
		CPU:           "10m",
		Memory:        "50Mi",
		PriorityClass: "system-cluster-critical",
		ControlPlane:  true,
		// As OpenShift's EFS operator runs: nothing the operator runs can change its binary.
		ReadOnlyRootFilesystem: true,
	}).Deployment()
}
