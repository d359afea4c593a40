// Package kube loads the cluster connection of the csi-olm verbs that talk to a cluster.
package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ClusterOptions are what every verb that reads or changes a cluster takes: where the cluster
// is, and whether it may change it.
type ClusterOptions struct {
	Kubeconfig string
	// Context is the kubeconfig context to use; empty takes the current one.
	Context string
	// Namespace limits a verb that reads namespaced objects to one namespace; empty reads all.
	Namespace string
	// DryRun prints what would be done and changes nothing.
	DryRun bool
	// Config, when set, is used instead of Kubeconfig and Context.
	Config *rest.Config
}

// The verbs' client-side rate limit.
const (
	clientQPS   = 50
	clientBurst = 100
)

// ConfigFlags are kubectl's own flags (cli-runtime's) over the options' connection fields:
// --kubeconfig and --context, and with namespaced, -n/--namespace.
func (o *ClusterOptions) ConfigFlags(namespaced bool) *genericclioptions.ConfigFlags {
	f := &genericclioptions.ConfigFlags{KubeConfig: &o.Kubeconfig, Context: &o.Context}
	if namespaced {
		f.Namespace = &o.Namespace
	}
	return f
}

// RESTConfig returns Config when it is set, else loads the connection the way kubectl does:
// --kubeconfig when given, else $KUBECONFIG, else ~/.kube/config, else the in-cluster service
// account, at --context when given.
func (o *ClusterOptions) RESTConfig() (*rest.Config, error) {
	if o.Config != nil {
		return o.Config, nil
	}
	cfg, err := o.ConfigFlags(false).ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the cluster connection (pass --kubeconfig or set KUBECONFIG): %w", err)
	}
	// client-go's default limit (5 requests a second, bursts of 10) held the verbs back, not the
	// API server: `migrate olm-v1`'s plan asks a SubjectAccessReview for every permission the verb
	// and the installer need, and its dry run took 14.3 s at that limit and 3.5 s at this one, the
	// operator's own (operator/starter.go). The API server's priority and fairness still guards
	// the cluster.
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	return cfg, nil
}

// FindDeployment returns a Deployment with one of the names, in any namespace, or nil.
func FindDeployment(ctx context.Context, client kubernetes.Interface, names ...string) (*appsv1.Deployment, error) {
	for _, name := range names {
		list, err := client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
		})
		if err != nil {
			return nil, fmt.Errorf("looking for Deployment %s: %w", name, err)
		}
		if len(list.Items) > 0 {
			return &list.Items[0], nil
		}
	}
	return nil, nil
}
