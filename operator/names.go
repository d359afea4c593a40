// Package operator is the AWS EFS CSI driver operator: library-go's CSI controllers deploy the
// driver for ClusterCSIDriver efs.csi.aws.com, and the controllers of this package decide when
// they may act (adoption of the community driver, uninstall guarded by volumes in use) and tell
// the admin when the CR is missing.
package operator

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OperatorName names the operator: its Deployment, ServiceAccount and event source.
const OperatorName = "aws-efs-csi-driver-operator"

// CRName is the only ClusterCSIDriver the operator watches.
const CRName = string(operatorv1.AWSEFSCSIDriver)

// Operand object names the controllers of this package refer to.
const (
	driverName         = "efs.csi.aws.com"
	controllerName     = "efs-csi-controller"
	nodeName           = "efs-csi-node"
	nodeServiceAccount = "efs-csi-sa"
	storageClassName   = "efs-sc"
	credentialsSecret  = "aws-efs-cloud-credentials"
	trustedCAConfigMap = "aws-efs-csi-driver-trusted-ca-bundle"
)

// The community aws-efs-operator's driver (DESIGN.md §3).
const (
	communityOwnedLabel = "openshift.io/aws-efs-operator-owned"
	communitySCC        = "efs-csi-scc"
	sharedVolumeCRD     = "sharedvolumes.aws-efs.managed.openshift.io"
)

// UninstallFinalizer keeps the ClusterCSIDriver until the driver is removed, which waits until no
// EFS PersistentVolume is left. It is named like the finalizers of library-go's controllers.
const UninstallFinalizer = OperatorName + ".operator.openshift.io/" + uninstallControllerName

var clusterCSIDriverGVR = operatorv1.GroupVersion.WithResource("clustercsidrivers")
var clusterCSIDriverGVK = operatorv1.GroupVersion.WithKind("ClusterCSIDriver")

var sccGVR = schema.GroupVersionResource{Group: "security.openshift.io", Version: "v1", Resource: "securitycontextconstraints"}
