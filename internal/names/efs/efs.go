// Package efs holds the names of the AWS EFS CSI driver, of its supported operator and of the
// community aws-efs-operator whose objects the supported operator adopts.
package efs

// The OLM package, shared by the community and the supported operator so that a community
// install upgrades by switching only its Subscription's source.
const Package = "aws-efs-operator"

// The supported operator.
const (
	// OperatorName is the operator's CSV prefix, Deployment, container, ServiceAccount and event
	// source.
	OperatorName = "aws-efs-csi-driver-operator"
	// CRName is the only ClusterCSIDriver the operator watches; it is named after the driver.
	CRName = DriverName
	// FinalizerPrefix starts every finalizer the operator's controllers put on the CR
	// (library-go names them <operator>.operator.openshift.io/<controller>).
	FinalizerPrefix = OperatorName + ".operator.openshift.io/"
	// RemovalFence names the ValidatingAdmissionPolicy, and its binding, that refuse new EFS
	// PersistentVolumes while the driver is removed: the operator's manifests, its CSV's RBAC
	// (resourceNames) and the API server's refusals all carry it.
	RemovalFence = "aws-efs-csi-driver-removal-fence"
	// RemovalFenceLabel marks the RemovalFences, the fence's parameters, which its binding
	// selects; the value says which part of the fence one is (head or shard).
	RemovalFenceLabel = "aws-efs.csi-olm.io/removal-fence"
	// RemovalFenceCRD is the CustomResourceDefinition of RemovalFences.
	RemovalFenceCRD = "removalfences.aws-efs.csi-olm.io"
	// SharedVolumeFinalizerPolicy names the MutatingAdmissionPolicy, and its binding, that put
	// the SharedVolume finalizer on new SharedVolumes while the operator is installed.
	SharedVolumeFinalizerPolicy = "aws-efs-sharedvolume-finalizer"
)

// The operator's own metrics: library-go serves them on OperatorMetricsPort with the certificate
// OpenShift's service CA writes for the Service into OperatorMetricsSecret.
const (
	OperatorMetricsService = OperatorName + "-metrics"
	OperatorMetricsSecret  = OperatorName + "-metrics-serving-cert"
	OperatorMetricsPort    = 8443
	// OperatorMetricsPortName names the port on the operator's container and its Service.
	OperatorMetricsPortName = "https"
	// ClusterMonitoringLabel is the namespace label OpenShift's cluster Prometheus selects the
	// namespaces it scrapes by; the operator's alert fires only from such a namespace.
	ClusterMonitoringLabel = "openshift.io/cluster-monitoring"
	// NotEnabledAlert is the operator's alert while no ClusterCSIDriver asks for the driver.
	NotEnabledAlert = "AWSEFSDriverNotEnabled"
)

// The driver the operator deploys.
const (
	DriverName           = "efs.csi.aws.com"
	ControllerDeployment = "efs-csi-controller"
	NodeDaemonSet        = "efs-csi-node"
	NodeServiceAccount   = "efs-csi-sa"
	StorageClass         = "efs-sc"
)

// The environment variables that hand the operand images to the operator: the bundle sets them
// on the operator's Deployment and library-go substitutes them into the driver's manifests.
const (
	DriverImageEnv        = "DRIVER_IMAGE"
	ProvisionerImageEnv   = "PROVISIONER_IMAGE"
	RegistrarImageEnv     = "NODE_DRIVER_REGISTRAR_IMAGE"
	LivenessProbeImageEnv = "LIVENESS_PROBE_IMAGE"
	KubeRBACProxyImageEnv = "KUBE_RBAC_PROXY_IMAGE"
)

// The community aws-efs-operator and the driver objects it leaves in the field.
const (
	// CommunityOperatorName names the community operator's CSV prefix, Deployment,
	// ServiceAccount, ClusterRole and ClusterRoleBinding.
	CommunityOperatorName = "aws-efs-operator"
	// CommunityOwnedLabel (value "true") marks every object the community operator created.
	CommunityOwnedLabel = "openshift.io/aws-efs-operator-owned"
	// CommunitySCC is the privileged SCC of the community node plugin.
	CommunitySCC = "efs-csi-scc"
	// NodeAppLabel is the community DaemonSet's immutable selector value (app=efs-csi-node).
	NodeAppLabel = NodeDaemonSet
)

// The SharedVolume API, defined by the community operator and kept unchanged.
const (
	SharedVolumeCRD = "sharedvolumes.aws-efs.managed.openshift.io"
	// SharedVolumeFinalizer holds a SharedVolume until its claim and volume are gone.
	SharedVolumeFinalizer = "finalizer.awsefs.managed.openshift.io"
	// Labels on a SharedVolume's PV and PVC naming the SharedVolume that owns them.
	SharedVolumeOwnerNamespaceLabel = "openshift.io/aws-efs-operator-shared-volume-owner-namespace"
	SharedVolumeOwnerNameLabel      = "openshift.io/aws-efs-operator-shared-volume-owner-name"
)

// SharedVolumePV names the PersistentVolume of SharedVolume namespace/name.
func SharedVolumePV(namespace, name string) string { return "pv-" + namespace + "-" + name }

// SharedVolumePVC names the PersistentVolumeClaim of a SharedVolume, in its namespace.
func SharedVolumePVC(name string) string { return "pvc-" + name }

// OperatorDeployments are the Deployments whose presence, in any namespace, means an EFS operator
// still runs: the supported one and the community one. Verbs that do an operator's work after it
// was uninstalled refuse while any of them exists.
var OperatorDeployments = []string{OperatorName, CommunityOperatorName}
