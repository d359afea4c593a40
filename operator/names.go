// Package operator is the AWS EFS CSI driver operator: library-go's CSI controllers deploy the
// driver for ClusterCSIDriver efs.csi.aws.com, and the controllers of this package decide when
// they may act (adoption of the community driver, uninstall guarded by volumes in use) and tell
// the admin when the CR is missing.
package operator

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// Operand objects only this package refers to; the names other packages share are in
// internal/names/efs.
const (
	credentialsSecret = "aws-efs-cloud-credentials"
	// nodeCredentialsSecret is the node plugin's (credentials_node.yaml).
	nodeCredentialsSecret = "node-aws-efs-cloud-credentials"
	// metricsCertSecret is the serving certificate of the controller's kube-rbac-proxy, which
	// the service CA writes for the metrics Service (service.yaml).
	metricsCertSecret  = "efs-csi-controller-metrics-serving-cert"
	trustedCAConfigMap = "aws-efs-csi-driver-trusted-ca-bundle"
	// driverContainer is the driver's container in the controller Deployment (controller.yaml).
	driverContainer = "csi-driver"
	// nodeDriverContainer is the driver's container in the node DaemonSet (node.yaml), named
	// as the community operator's so that adoption keeps the pod template's shape.
	nodeDriverContainer = "efs-plugin"
)

// UninstallFinalizer keeps the ClusterCSIDriver until the driver is removed, which waits until no
// pod uses an EFS volume. It is named like the finalizers of library-go's controllers.
const UninstallFinalizer = efs.FinalizerPrefix + uninstallControllerName

var clusterCSIDriverGVR = operatorv1.GroupVersion.WithResource("clustercsidrivers")
var clusterCSIDriverGVK = operatorv1.GroupVersion.WithKind("ClusterCSIDriver")

var sccGVR = schema.GroupVersionResource{Group: "security.openshift.io", Version: "v1", Resource: "securitycontextconstraints"}
