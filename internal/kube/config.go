// Package kube loads the cluster connection of the csi-olm verbs that talk to a cluster.
package kube

import (
	"fmt"

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
