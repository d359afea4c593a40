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

// StaticGroups are the manifests the static resource controllers apply, one controller a group,
// each group in order. The groups are applied side by side: one after another, the 16 objects
// took 2.2 s in the operator's pod on the real node (BENCHMARKS.md), most of it in the RBAC
// objects, which the API server checks for escalation. A role and its binding stay together.
var StaticGroups = []StaticGroup{
	{Files: []string{"node_sa.yaml", "controller_sa.yaml", "csidriver.yaml", "cabundle_cm.yaml", "service.yaml", "servicemonitor.yaml", "controller_pdb.yaml"}},
	{Name: "Provisioner", Files: []string{"rbac/provisioner_role.yaml", "rbac/provisioner_binding.yaml", "rbac/lease_role.yaml", "rbac/lease_binding.yaml"}},
	{Name: "Node", Files: []string{"rbac/privileged_role.yaml", "rbac/node_privileged_binding.yaml"}},
	{Name: "Metrics", Files: []string{"rbac/kube_rbac_proxy_role.yaml", "rbac/kube_rbac_proxy_binding.yaml", "rbac/prometheus_role.yaml", "rbac/prometheus_binding.yaml"}},
}

// StaticGroup is one static resource controller's manifests. Name tells its controller from the
// others; the first group's is empty, which keeps the name the controller had alone.
type StaticGroup struct {
	Name  string
	Files []string
}

// StaticFiles are all the manifests the static resource controllers apply.
var StaticFiles = func() []string {
	var files []string
	for _, g := range StaticGroups {
		files = append(files, g.Files...)
	}
	return files
}()

// The manifests that the other controllers apply, one each.
const (
	ControllerFile  = "controller.yaml"
	NodeFile        = "node.yaml"
	CredentialsFile = "credentials.yaml"
	// NodeCredentialsFile is the node plugin's CredentialsRequest.
	NodeCredentialsFile = "credentials_node.yaml"
)

// OperandFiles are all the manifests the driver consists of: what the controllers above apply,
// and exactly what an uninstall deletes.
var OperandFiles = slices.Concat(StaticFiles, []string{ControllerFile, NodeFile, NodeCredentialsFile, CredentialsFile})

// PrometheusRuleFile is the operator's own alert, not part of the driver: the presence controller
// keeps it while the operator runs, whatever the CR says.
const PrometheusRuleFile = "prometheusrule.yaml"

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
