package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/operator/assets"
)

const presenceControllerName = "AWSEFSDriverPresence"

// CRPresent is 1 while ClusterCSIDriver efs.csi.aws.com exists, 0 while the operator waits for it.
// The PrometheusRule of the operator raises an info alert on 0.
var CRPresent = metrics.NewGauge(&metrics.GaugeOpts{
	Name:           "aws_efs_csi_driver_operator_clustercsidriver_present",
	Help:           "1 when ClusterCSIDriver efs.csi.aws.com exists, 0 when the operator waits for an admin to create it.",
	StabilityLevel: metrics.ALPHA,
})

func init() {
	legacyregistry.MustRegister(CRPresent)
}

// presenceController tells the admin, without deploying anything, that the driver is not
// installed until the CR exists: an event when the CR is missing, the CRPresent metric and the
// PrometheusRule alert on it.
type presenceController struct {
	operatorClient v1helpers.OperatorClientWithFinalizers
	dynamic        dynamic.Interface
	assets         func(string) ([]byte, error)
	// namespace is the operator's own, where OLM created its ServiceMonitor.
	namespace  string
	wasPresent *bool
}

func newPresenceController(c *presenceController, recorder events.Recorder) factory.Controller {
	return factory.New().
		WithInformers(c.operatorClient.Informer()).
		WithSync(c.sync).
		ResyncEvery(10*time.Minute).
		ToController(presenceControllerName, recorder)
}

func (c *presenceController) sync(ctx context.Context, syncCtx factory.SyncContext) error {
	raw, err := c.assets(assets.PrometheusRuleFile)
	if err != nil {
		return err
	}
	rule := resourceread.ReadUnstructuredOrDie(raw)
	// Without the monitoring stack's CRD there is nothing to alert with; the event stays.
	if _, _, err := resourceapply.ApplyPrometheusRule(ctx, c.dynamic, syncCtx.Recorder(), rule); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("applying PrometheusRule %s: %w", rule.GetName(), err)
	}
	_, _, _, err = c.operatorClient.GetOperatorState()
	present := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if present {
		CRPresent.Set(1)
	} else {
		CRPresent.Set(0)
	}
	if !present && (c.wasPresent == nil || *c.wasPresent) {
		syncCtx.Recorder().Warningf("ClusterCSIDriverMissing",
			"ClusterCSIDriver %s does not exist, so the AWS EFS CSI driver is not installed: create it with managementState Managed to install the driver", efs.CRName)
	}
	c.wasPresent = &present
	return c.fixServiceMonitor(ctx)
}

var serviceMonitorGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}

// fixServiceMonitor points the operator's ServiceMonitor, which its bundle ships, at the
// certificate of the namespace the operator runs in. A bundle cannot template the namespace,
// so it names the suggested one; installed elsewhere (a community install switched to this
// catalog keeps the community's namespace), the cluster's Prometheus would refuse the
// certificate, and the operator's alert could never fire. Only the endpoints' serverName is
// changed, and only when wrong.
func (c *presenceController) fixServiceMonitor(ctx context.Context) error {
	client := c.dynamic.Resource(serviceMonitorGVR).Namespace(c.namespace)
	monitor, err := client.Get(ctx, efs.OperatorName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // no monitoring stack, or a bundle without it
	}
	if err != nil {
		return fmt.Errorf("reading ServiceMonitor %s/%s: %w", c.namespace, efs.OperatorName, err)
	}
	want := efs.OperatorMetricsService + "." + c.namespace + ".svc"
	fixed := monitor.DeepCopy()
	endpoints, _, err := unstructured.NestedSlice(fixed.Object, "spec", "endpoints")
	if err != nil {
		return fmt.Errorf("ServiceMonitor %s/%s: %w", c.namespace, efs.OperatorName, err)
	}
	changed := false
	for _, e := range endpoints {
		endpoint, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if name, found, _ := unstructured.NestedString(endpoint, "tlsConfig", "serverName"); found && name != want {
			if err := unstructured.SetNestedField(endpoint, want, "tlsConfig", "serverName"); err != nil {
				return err
			}
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := unstructured.SetNestedSlice(fixed.Object, endpoints, "spec", "endpoints"); err != nil {
		return err
	}
	if _, err := client.Update(ctx, fixed, metav1.UpdateOptions{FieldManager: presenceControllerName}); err != nil {
		return fmt.Errorf("pointing ServiceMonitor %s/%s at %s: %w", c.namespace, efs.OperatorName, want, err)
	}
	klog.Infof("ServiceMonitor %s/%s now verifies the metrics certificate as %s", c.namespace, efs.OperatorName, want)
	return nil
}
