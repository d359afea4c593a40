// Package ebs holds the names of the OLM-era (4.5) AWS EBS CSI driver operator and its operands,
// which the bundle definition writes and the OLM -> cluster-storage-operator migration finds.
package ebs

const (
	Package           = "aws-ebs-csi-driver-operator"
	OperatorName      = "aws-ebs-csi-driver-operator"
	OperatorNamespace = "openshift-aws-ebs-csi-driver-operator"
	OperandNamespace  = "openshift-aws-ebs-csi-driver"
	ControllerName    = "aws-ebs-csi-driver-controller"
	NodeName          = "aws-ebs-csi-driver-node"
	CSIDriver         = "ebs.csi.aws.com"
)
