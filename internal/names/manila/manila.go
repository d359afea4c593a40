// Package manila holds the names of the OLM-era (4.5) OpenStack Manila CSI driver operator and
// its operands, which the bundle definition writes and the OLM -> cluster-storage-operator
// migration finds.
package manila

const (
	Package   = "manila-csi-driver-operator"
	CSVPrefix = "manila-csi-driver-operator"
	// OperatorName is the operator's Deployment; it differs from the CSV prefix.
	OperatorName      = "csi-driver-manila-operator"
	OperatorNamespace = "openshift-manila-csi-driver-operator"
	OperandNamespace  = "openshift-manila-csi-driver"
	ControllerName    = "openstack-manila-csi-controllerplugin"
	NodeName          = "openstack-manila-csi-nodeplugin"
	NFSNodeName       = "csi-nodeplugin-nfsplugin"
	CSIDriver         = "manila.csi.openstack.org"
)
