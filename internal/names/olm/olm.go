// Package olm holds the names OLM gives what it creates for a ClusterServiceVersion, which
// csi-olm reads but does not create (operator-lifecycle-manager v0.46.0).
package olm

// Labels OLM puts on the cluster-scoped objects it makes for a CSV, such as the ClusterRole and
// ClusterRoleBinding of its clusterPermissions, in place of an ownerReference (which cannot
// point from a cluster-scoped object to a namespaced one). OLM deletes these objects when it
// deletes the CSV (pkg/lib/ownerutil).
const (
	OwnerLabel          = "olm.owner"
	OwnerNamespaceLabel = "olm.owner.namespace"
	OwnerKindLabel      = "olm.owner.kind"
	// OwnerKindCSV is the value of OwnerKindLabel on a CSV's objects.
	OwnerKindCSV = "ClusterServiceVersion"
)

// OperatorConditionEnv is the variable OLM sets, to the CSV's name, in every container of the
// Deployments it installs for a CSV (pkg/controller/install).
const OperatorConditionEnv = "OPERATOR_CONDITION_NAME"

// OwnerLabels are the labels OLM puts on the cluster-scoped objects of CSV csv in namespace.
func OwnerLabels(csv, namespace string) map[string]string {
	return map[string]string{OwnerLabel: csv, OwnerNamespaceLabel: namespace, OwnerKindLabel: OwnerKindCSV}
}
