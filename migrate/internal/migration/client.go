package migration

import (
	openshiftoperatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ebsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver/v1alpha1"
	manilav1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/v1alpha1"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// NewClient returns a client that knows the Kubernetes, OLM, OpenShift operator, SharedVolume
// CRD and OLM-era driver CR types the migrations read and change.
func NewClient(config *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, operatorsv1alpha1.AddToScheme, operatorsv1.AddToScheme, openshiftoperatorv1.Install,
		sharedvolumev1alpha1.AddToScheme, ebsv1alpha1.AddToScheme, manilav1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(config, client.Options{Scheme: scheme})
}
