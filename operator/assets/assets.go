// Package assets holds the manifests of the AWS EFS CSI driver that the operator deploys. They
// are read as typed objects by library-go; ${NAMESPACE} is the operator's own namespace and the
// other placeholders (${DRIVER_IMAGE}, ${LOG_LEVEL}...) are filled by library-go's controllers.
package assets

import (
	"bytes"
	"embed"
	"slices"

	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
)

//go:embed *.yaml rbac/*.yaml
var files embed.FS

// StaticFiles are the manifests the static resource controller applies, in order.
var StaticFiles = []string{
	"node_sa.yaml",
	"controller_sa.yaml",
	"csidriver.yaml",
	"cabundle_cm.yaml",
	"service.yaml",
	"rbac/provisioner_role.yaml",
	"rbac/provisioner_binding.yaml",
	"rbac/lease_role.yaml",
	"rbac/lease_binding.yaml",
	"rbac/privileged_role.yaml",
	"rbac/node_privileged_binding.yaml",
	"rbac/kube_rbac_proxy_role.yaml",
	"rbac/kube_rbac_proxy_binding.yaml",
	"rbac/prometheus_role.yaml",
	"rbac/prometheus_binding.yaml",
	"servicemonitor.yaml",
}

// The manifests that the other controllers apply, one each.
const (
	ControllerFile  = "controller.yaml"
	NodeFile        = "node.yaml"
	CredentialsFile = "credentials.yaml"
)

// OperandFiles are all the manifests the driver consists of: what the controllers above apply,
// and exactly what an uninstall deletes.
var OperandFiles = slices.Concat(StaticFiles, []string{ControllerFile, NodeFile, CredentialsFile})

// PrometheusRuleFile is the operator's own alert, not part of the driver: the presence controller
// keeps it while the operator runs, whatever the CR says.
const PrometheusRuleFile = "prometheusrule.yaml"

// The removal fence, a ValidatingAdmissionPolicy and its binding, is not part of the driver
// either: the uninstall controller puts it up before a removal and leaves it, since it must keep
// refusing new volumes for as long as the ClusterCSIDriver is Removed.
const (
	RemovalFenceFile        = "removal_fence.yaml"
	RemovalFenceBindingFile = "removal_fence_binding.yaml"
)

// For returns the manifests with ${NAMESPACE} set to namespace.
func For(namespace string) resourceapply.AssetFunc {
	return func(name string) ([]byte, error) {
		content, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		return bytes.ReplaceAll(content, []byte("${NAMESPACE}"), []byte(namespace)), nil
	}
}
