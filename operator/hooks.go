package operator

import (
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	configlisters "github.com/openshift/client-go/config/listers/config/v1"
	dc "github.com/openshift/library-go/pkg/operator/deploymentcontroller"
	appsv1 "k8s.io/api/apps/v1"
)

// tagsFlag is the driver's flag for tags on every EFS object it creates (access points).
const tagsFlag = "--tags="

// withClusterTagsHook tags what the driver creates with the cluster's ID, as OpenShift's CSI
// driver guide requires so that the installer can find and delete it with the cluster, and as
// OpenShift's own EFS operator does: kubernetes.io/cluster/<infrastructureName>:owned. The
// Infrastructure informer is among the controller's, so a change of name reaches the pods.
func withClusterTagsHook(infra configlisters.InfrastructureLister) dc.DeploymentHookFunc {
	return func(_ *operatorv1.OperatorSpec, d *appsv1.Deployment) error {
		cluster, err := infra.Get("cluster")
		if err != nil {
			return fmt.Errorf("reading the cluster ID for the driver's tags: %w", err)
		}
		id := cluster.Status.InfrastructureName
		if id == "" {
			return fmt.Errorf("infrastructure cluster has no status.infrastructureName yet: the driver's tags need it")
		}
		tag := tagsFlag + "kubernetes.io/cluster/" + id + ":owned"
		for i := range d.Spec.Template.Spec.Containers {
			c := &d.Spec.Template.Spec.Containers[i]
			if c.Name != driverContainer {
				continue
			}
			args := c.Args[:0:0]
			for _, a := range c.Args {
				if !strings.HasPrefix(a, tagsFlag) {
					args = append(args, a)
				}
			}
			c.Args = append(args, tag)
			return nil
		}
		return fmt.Errorf("deployment %s has no container %s to tag", d.Name, driverContainer)
	}
}
