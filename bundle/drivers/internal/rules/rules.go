// Package rules holds the RBAC building blocks the operator definitions share. Each block is the
// least an operator needs for one job; an operator's permissions are the blocks it uses.
package rules

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/csi-olm/csi-olm/bundle/definition"
)

var (
	core     = []string{""}
	apps     = []string{"apps"}
	storage  = []string{"storage.k8s.io"}
	snapshot = []string{"snapshot.storage.k8s.io"}
	rbac     = []string{"rbac.authorization.k8s.io"}
)

// OwnCR lets an operator read its cluster-scoped CR, write its status and manage its finalizer.
func OwnCR(group, resource string) []rbacv1.PolicyRule {
	g := []string{group}
	return []rbacv1.PolicyRule{
		definition.Rule(g, []string{resource}, []string{"get", "list", "watch", "update", "patch"}),
		definition.Rule(g, []string{resource + "/status"}, []string{"get", "update", "patch"}),
		definition.Rule(g, []string{resource + "/finalizers"}, []string{"update"}),
	}
}

// Operands lets an operator run its driver's workloads: Deployments and DaemonSets with their
// ServiceAccounts, RBAC, configuration and leader-election leases.
func Operands() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		definition.Rule(core, []string{"serviceaccounts", "configmaps", "secrets", "services"}, definition.ReadWrite),
		definition.Rule(core, []string{"pods"}, definition.ReadOnly),
		definition.Rule(apps, []string{"deployments", "daemonsets"}, definition.ReadWrite),
		definition.Rule(apps, []string{"replicasets"}, []string{"get"}),
		definition.Rule([]string{"coordination.k8s.io"}, []string{"leases"}, definition.ReadWrite),
		definition.Rule(rbac, []string{"roles", "rolebindings"}, definition.ReadWrite),
	}
}

// ClusterOperands lets an operator create the cluster-scoped driver objects: the CSIDriver,
// StorageClasses, and the ClusterRoles of the driver's service accounts.
func ClusterOperands() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		definition.Rule(storage, []string{"csidrivers", "storageclasses"}, definition.ReadWrite),
		definition.Rule(rbac, []string{"clusterroles", "clusterrolebindings"}, definition.ReadWrite),
		definition.Rule(core, []string{"events"}, []string{"get", "list", "watch", "create", "update", "patch"}),
	}
}

// Provisioner is what the CSI external-provisioner needs. An operator must hold it to grant it to
// the driver's controller ServiceAccount (RBAC forbids granting what one does not hold).
func Provisioner() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		definition.Rule(core, []string{"persistentvolumes"}, definition.ReadWrite),
		definition.Rule(core, []string{"persistentvolumeclaims"}, []string{"get", "list", "watch", "update", "patch"}),
		definition.Rule(core, []string{"nodes"}, definition.ReadOnly),
		definition.Rule(storage, []string{"csinodes", "volumeattachments"}, definition.ReadOnly),
	}
}

// AttacherResizer is what the CSI external-attacher and external-resizer need.
func AttacherResizer() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		definition.Rule(storage, []string{"volumeattachments"}, []string{"update", "patch"}),
		definition.Rule(storage, []string{"volumeattachments/status"}, []string{"patch"}),
		definition.Rule(core, []string{"persistentvolumeclaims/status"}, []string{"update", "patch"}),
	}
}

// Snapshotter is what the CSI external-snapshotter sidecar needs.
func Snapshotter() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		definition.Rule(snapshot, []string{"volumesnapshotclasses"}, definition.ReadOnly),
		definition.Rule(snapshot, []string{"volumesnapshotcontents"}, definition.ReadWrite),
		definition.Rule(snapshot, []string{"volumesnapshotcontents/status"}, []string{"update", "patch"}),
		definition.Rule(snapshot, []string{"volumesnapshots"}, []string{"get", "list", "watch", "update", "patch"}),
	}
}

// MetricsProxy is what kube-rbac-proxy needs to authorize scrapes of the driver's metrics.
func MetricsProxy() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		definition.Rule([]string{"authentication.k8s.io"}, []string{"tokenreviews"}, []string{"create"}),
		definition.Rule([]string{"authorization.k8s.io"}, []string{"subjectaccessreviews"}, []string{"create"}),
	}
}

// DelegatedAuthentication lets a library-go operator's metrics server read the API server's
// client CAs, which controllercmd loads from ConfigMap kube-system/extension-apiserver-authentication
// at start (without them the operator exits). Only that ConfigMap name is granted; CSV permissions
// cannot name a namespace other than the operator's, so the rule is cluster-wide.
func DelegatedAuthentication() rbacv1.PolicyRule {
	return definition.Rule([]string{""}, []string{"configmaps"}, definition.ReadOnly, "extension-apiserver-authentication")
}

// UseSCC lets the operator grant the named SecurityContextConstraints to the driver's pods.
func UseSCC(names ...string) rbacv1.PolicyRule {
	return definition.Rule([]string{"security.openshift.io"}, []string{"securitycontextconstraints"}, []string{"use"}, names...)
}

// CredentialsRequests lets an operator ask the cloud-credential operator for cloud credentials.
func CredentialsRequests() rbacv1.PolicyRule {
	return definition.Rule([]string{"cloudcredential.openshift.io"}, []string{"credentialsrequests"}, definition.ReadWrite)
}

// Join concatenates rule blocks.
func Join(blocks ...[]rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var all []rbacv1.PolicyRule
	for _, b := range blocks {
		all = append(all, b...)
	}
	return all
}
