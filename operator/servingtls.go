package operator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	configinformers "github.com/openshift/client-go/config/informers/externalversions"
	"github.com/openshift/library-go/pkg/crypto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// ServingConfig is library-go's configuration of the operator's own HTTPS endpoint (metrics and
// health, controllercmd's --config) with the cluster's TLS profile, APIServer/cluster
// spec.tlsSecurityProfile, which the CSV's tls-profiles annotation promises. The profile is
// honoured whatever spec.tlsAdherence says, as the config observer honours it for the driver's
// kube-rbac-proxy: one cluster, one profile on every port this operator serves. Without a
// profile, OpenShift's default, Intermediate.
func ServingConfig(apiServer *configv1.APIServer) *operatorv1alpha1.GenericOperatorConfig {
	spec := configv1.TLSProfiles[crypto.DefaultTLSProfileType]
	if p := apiServer.Spec.TLSSecurityProfile; p != nil {
		switch {
		case p.Type == configv1.TLSProfileCustomType && p.Custom != nil:
			spec = &p.Custom.TLSProfileSpec
		case configv1.TLSProfiles[p.Type] != nil:
			spec = configv1.TLSProfiles[p.Type]
		}
	}
	config := &operatorv1alpha1.GenericOperatorConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: operatorv1alpha1.GroupVersion.String(), Kind: "GenericOperatorConfig"},
	}
	config.ServingInfo.MinTLSVersion = string(spec.MinTLSVersion)
	config.ServingInfo.CipherSuites = crypto.OpenSSLToIANACipherSuites(spec.Ciphers)
	return config
}

// WriteServingConfig reads APIServer/cluster and writes ServingConfig into dir, returning the
// file's path. The operator must not serve if it fails: it would serve with Go's defaults,
// not the cluster's profile.
func WriteServingConfig(ctx context.Context, client configclient.Interface, dir string) (string, error) {
	apiServer, err := client.ConfigV1().APIServers().Get(ctx, "cluster", metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the cluster's TLS profile from APIServer cluster: %w", err)
	}
	path := filepath.Join(dir, "serving-config.yaml")
	if _, err := writeServingConfig(path, apiServer); err != nil {
		return "", err
	}
	return path, nil
}

// writeServingConfig writes the serving configuration of apiServer to path unless path holds it
// already, and says whether it wrote.
func writeServingConfig(path string, apiServer *configv1.APIServer) (bool, error) {
	raw, err := yaml.Marshal(ServingConfig(apiServer))
	if err != nil {
		return false, err
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, raw) {
		return false, nil
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return false, fmt.Errorf("writing the serving configuration: %w", err)
	}
	return true, nil
}

// RestartOnNewProfile rewrites the serving configuration at path whenever APIServer/cluster's
// profile changes it, until ctx ends. library-go's controllercmd watches its --config file and
// restarts the process when it changes, as it does for a new serving certificate: the new
// process serves with the new profile.
func RestartOnNewProfile(ctx context.Context, client configclient.Interface, path string) error {
	factory := configinformers.NewSharedInformerFactoryWithOptions(client, resync,
		configinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=cluster" }))
	_, err := factory.Config().V1().APIServers().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			apiServer, ok := obj.(*configv1.APIServer)
			if !ok {
				return
			}
			switch wrote, err := writeServingConfig(path, apiServer); {
			case err != nil:
				klog.Errorf("the cluster's TLS profile changed, but the operator keeps serving with the old one: %v", err)
			case wrote:
				klog.Infof("the cluster's TLS profile changed: restarting to serve with it")
			}
		},
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	return nil
}
