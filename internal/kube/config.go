// Package kube loads the cluster connection of the csi-olm verbs that talk to a cluster.
package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config loads a client configuration the way kubectl does: --kubeconfig when given, else
// $KUBECONFIG, else ~/.kube/config, else the in-cluster service account.
func Config(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the cluster connection (pass --kubeconfig or set KUBECONFIG): %w", err)
	}
	return cfg, nil
}

// ClusterOptions are what every verb that reads or changes a cluster takes: where the cluster
// is, and whether it may change it.
type ClusterOptions struct {
	Kubeconfig string
	// DryRun prints what would be done and changes nothing.
	DryRun bool
	// Config, when set, is used instead of Kubeconfig.
	Config *rest.Config
}

// RESTConfig returns Config when it is set, else loads Kubeconfig as Config does.
func (o *ClusterOptions) RESTConfig() (*rest.Config, error) {
	if o.Config != nil {
		return o.Config, nil
	}
	return Config(o.Kubeconfig)
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
