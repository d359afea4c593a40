package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/test/promqltest"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// The cluster monitoring stack's identity and CA bundle, as OpenShift's Prometheus has them.
const (
	monitoringNamespace = "openshift-monitoring"
	prometheusSA        = "prometheus-k8s"
	servingCertsCA      = "serving-certs-ca-bundle"
	scraperImage        = "quay.io/csi-olm-test/scraper:e2e"
	notEnabledAlert     = efs.NotEnabledAlert
	// The CSV annotation that asks OperatorHub to label the install namespace, and the label
	// the cluster's Prometheus selects namespaces by.
	clusterMonitoringAnnotation = "operatorframework.io/cluster-monitoring"
	clusterMonitoringLabel      = efs.ClusterMonitoringLabel
	presentMetric               = "aws_efs_csi_driver_operator_clustercsidriver_present"
)

// actAsClusterPrometheus gives the node what OpenShift's monitoring stack is: the prometheus-k8s
// ServiceAccount and the service CA bundle its pods mount, and pushes the scraper's image.
func actAsClusterPrometheus(ctx context.Context, t *testing.T, s *testbed.Stack) {
	t.Helper()
	binary, err := os.ReadFile(testutil.BuildStatic(t, "github.com/csi-olm/csi-olm/test/e2e/scraper", "amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PushBinaryImage(ctx, scraperImage, testbed.BinaryImage{Binary: binary, Paths: []string{"/bin/scraper"}}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: monitoringNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: monitoringNamespace, Name: prometheusSA}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: monitoringNamespace, Name: servingCertsCA,
			Annotations: map[string]string{"service.beta.openshift.io/inject-cabundle": "true"}}},
	} {
		if err := s.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// scrapeOperator scrapes the operator's metrics from a pod on the node as the cluster's
// Prometheus would: following the ServiceMonitor and Service that OLM created from the bundle,
// through the Service, verifying the service CA's certificate, with prometheus-k8s's token.
// It returns the exposition.
func scrapeOperator(ctx context.Context, t *testing.T, s *testbed.Stack, namespace string) string {
	t.Helper()
	var ns corev1.Namespace
	if err := s.Client.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil || ns.Labels[clusterMonitoringLabel] != "true" {
		t.Fatalf("the cluster's Prometheus reads no ServiceMonitor in namespace %s (labels %v, %v)", namespace, ns.Labels, err)
	}
	var monitor monitoringv1.ServiceMonitor
	if err := getTyped(ctx, s, monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.ServiceMonitorsKind), namespace, efs.OperatorName, &monitor); err != nil {
		t.Fatalf("the operator's ServiceMonitor, from its bundle: %v", err)
	}
	if len(monitor.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor %s has %d endpoints, the test follows one", monitor.Name, len(monitor.Spec.Endpoints))
	}
	ep := monitor.Spec.Endpoints[0]
	if ep.TLSConfig == nil || ep.TLSConfig.ServerName == nil {
		t.Fatalf("ServiceMonitor %s does not verify the operator's certificate: %+v", monitor.Name, ep.TLSConfig)
	}
	var services corev1.ServiceList
	if err := s.Client.List(ctx, &services, client.InNamespace(namespace), client.MatchingLabels(monitor.Spec.Selector.MatchLabels)); err != nil || len(services.Items) != 1 {
		t.Fatalf("ServiceMonitor %s selects %d Services (%v)", monitor.Name, len(services.Items), err)
	}
	svc := services.Items[0]
	port := int32(0)
	for _, p := range svc.Spec.Ports {
		if p.Name == ep.Port {
			port = p.Port
		}
	}
	if port == 0 {
		t.Fatalf("Service %s has no port %q", svc.Name, ep.Port)
	}
	url := fmt.Sprintf("%s://%s.%s.svc:%d%s", ep.Scheme, svc.Name, svc.Namespace, port, ep.Path)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: monitoringNamespace, GenerateName: "scraper-"},
		Spec: corev1.PodSpec{
			NodeName:           testbed.RealNodeName,
			ServiceAccountName: prometheusSA,
			RestartPolicy:      corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "scraper", Image: scraperImage,
				Args:         []string{"--url=" + url, "--ca-file=" + ep.TLSConfig.CAFile, "--server-name=" + *ep.TLSConfig.ServerName, "--bearer-token-file=" + ep.BearerTokenFile},
				VolumeMounts: []corev1.VolumeMount{{Name: "ca", MountPath: path.Dir(ep.TLSConfig.CAFile), ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "ca", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: servingCertsCA}},
			}}},
		},
	}
	// The service CA writes the operator's certificate, then the operator serves it; a scrape
	// before that fails, as a Prometheus target is down until then.
	var exposition string
	err := testutil.Eventually(ctx, "a scrape of "+url, func(ctx context.Context) error {
		p := pod.DeepCopy()
		if err := s.Client.Create(ctx, p); err != nil {
			return err
		}
		defer s.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0))
		for p.Status.Phase != corev1.PodSucceeded {
			if p.Status.Phase == corev1.PodFailed {
				return errors.New(containerLog(ctx, s, p, "scraper", 0))
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("scraper pod %s: %s", p.Name, podProblem(p))
			case <-time.After(200 * time.Millisecond):
			}
			if err := s.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
		}
		exposition = containerLog(ctx, s, p, "scraper", 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return exposition
}

// notEnabledSeries evaluates the AWSEFSDriverNotEnabled alert's expression, as the operator's
// PrometheusRule has it, on a scrape: the number of series is the number of alerts that fire.
func notEnabledSeries(ctx context.Context, t *testing.T, s *testbed.Stack, namespace, exposition string) int {
	t.Helper()
	var rule monitoringv1.PrometheusRule
	if err := getTyped(ctx, s, monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusRuleKind), namespace, efs.OperatorName, &rule); err != nil {
		t.Fatalf("the operator's PrometheusRule: %v", err)
	}
	expr := ""
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == notEnabledAlert {
				expr = r.Expr.String()
			}
		}
	}
	if expr == "" {
		t.Fatalf("PrometheusRule %s has no alert %s", rule.Name, notEnabledAlert)
	}
	// An expression that names no scraped series gives nothing either: the metric must be there.
	if present, err := promqltest.Eval(ctx, exposition, presentMetric); err != nil || len(present) != 1 {
		t.Fatalf("the scrape holds %d series of %s (%v):\n%s", len(present), presentMetric, err, exposition)
	}
	vector, err := promqltest.Eval(ctx, exposition, expr)
	if err != nil {
		t.Fatalf("%s on the scraped samples: %v\n%s", expr, err, exposition)
	}
	t.Logf("%s -> %s", expr, vector)
	return len(vector)
}

// getTyped reads an object of a CRD the test's client has no scheme for.
func getTyped(ctx context.Context, s *testbed.Stack, gvk schema.GroupVersionKind, namespace, name string, into any) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
