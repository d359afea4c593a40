package operator

import (
	"fmt"

	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/operator/genericoperatorclient"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// newOperatorClient watches only ClusterCSIDriver efs.csi.aws.com: a CR with any other name is
// another driver's and is never read.
func newOperatorClient(c clock.PassiveClock, config *rest.Config) (v1helpers.OperatorClientWithFinalizers, dynamicinformer.DynamicSharedInformerFactory, error) {
	return genericoperatorclient.NewClusterScopedOperatorClientWithConfigName(c, config, clusterCSIDriverGVR, clusterCSIDriverGVK, efs.CRName, extractSpec, extractStatus)
}

func toClusterCSIDriver(obj *unstructured.Unstructured) (*operatorv1.ClusterCSIDriver, error) {
	var ccd operatorv1.ClusterCSIDriver
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &ccd); err != nil {
		return nil, fmt.Errorf("decoding ClusterCSIDriver %s: %w", obj.GetName(), err)
	}
	return &ccd, nil
}

func extractSpec(obj *unstructured.Unstructured, fieldManager string) (*applyoperatorv1.OperatorSpecApplyConfiguration, error) {
	ccd, err := toClusterCSIDriver(obj)
	if err != nil {
		return nil, err
	}
	cfg, err := applyoperatorv1.ExtractClusterCSIDriver(ccd, fieldManager)
	if err != nil || cfg.Spec == nil {
		return nil, err
	}
	return &cfg.Spec.OperatorSpecApplyConfiguration, nil
}

func extractStatus(obj *unstructured.Unstructured, fieldManager string) (*applyoperatorv1.OperatorStatusApplyConfiguration, error) {
	ccd, err := toClusterCSIDriver(obj)
	if err != nil {
		return nil, err
	}
	cfg, err := applyoperatorv1.ExtractClusterCSIDriverStatus(ccd, fieldManager)
	if err != nil || cfg.Status == nil {
		return nil, err
	}
	return &cfg.Status.OperatorStatusApplyConfiguration, nil
}
