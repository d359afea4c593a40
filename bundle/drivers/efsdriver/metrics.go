package efsdriver

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// servingCertDir is where library-go's controllercmd looks for a serving certificate; without
// one it serves with a self-signed certificate that no scraper can verify.
const servingCertDir = "/var/run/secrets/serving-cert"

// The cluster monitoring stack: its Prometheus, and the service CA bundle it verifies targets with.
const (
	monitoringNamespace = "openshift-monitoring"
	prometheusSA        = "prometheus-k8s"
	serviceCAFile       = "/etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt"
)

// metricsManifests let the cluster's Prometheus scrape the operator, with or without the
// ClusterCSIDriver: the AWSEFSDriverNotEnabled alert is about the time without it. They name the
// suggested namespace, because the certificate's name does and a bundle cannot template it.
func metricsManifests(namespace string) []runtime.Object {
	labels := map[string]string{"app": efs.OperatorMetricsService}
	return []runtime.Object{
		&corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        efs.OperatorMetricsService,
				Labels:      labels,
				Annotations: map[string]string{"service.beta.openshift.io/serving-cert-secret-name": efs.OperatorMetricsSecret},
			},
			Spec: corev1.ServiceSpec{
				Selector: operatorPodSelector,
				Ports: []corev1.ServicePort{{
					Name: efs.OperatorMetricsPortName, Port: efs.OperatorMetricsPort, Protocol: corev1.ProtocolTCP,
					TargetPort: intstr.FromString(efs.OperatorMetricsPortName),
				}},
			},
		},
		&monitoringv1.ServiceMonitor{
			TypeMeta:   metav1.TypeMeta{APIVersion: monitoringv1.SchemeGroupVersion.String(), Kind: monitoringv1.ServiceMonitorsKind},
			ObjectMeta: metav1.ObjectMeta{Name: efs.OperatorName},
			Spec: monitoringv1.ServiceMonitorSpec{
				Selector: metav1.LabelSelector{MatchLabels: labels},
				Endpoints: []monitoringv1.Endpoint{{
					Port: efs.OperatorMetricsPortName, Scheme: "https", Path: "/metrics", Interval: "30s",
					BearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
					TLSConfig: &monitoringv1.TLSConfig{
						CAFile:        serviceCAFile,
						SafeTLSConfig: monitoringv1.SafeTLSConfig{ServerName: ptr.To(efs.OperatorMetricsService + "." + namespace + ".svc")},
					},
				}},
			},
		},
		// Prometheus discovers targets through the Service's endpoints and pods.
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: efs.OperatorName + "-prometheus"},
			Rules:      []rbacv1.PolicyRule{definition.Rule([]string{""}, []string{"services", "endpoints", "pods"}, definition.ReadOnly)},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: efs.OperatorName + "-prometheus"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: efs.OperatorName + "-prometheus"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: prometheusSA, Namespace: monitoringNamespace}},
		},
	}
}

// networkPolicy lets the operator's pod reach what it needs and be reached only by the cluster's
// Prometheus, on its metrics port. Egress stays open: the API server's address is the cluster's
// own, and OpenShift's EFS operator pod carries the all-egress label for the same reason. It
// selects the pod by the Deployment's selector, which no release changes.
func networkPolicy(podLabels map[string]string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: efs.OperatorName},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: podLabels},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{corev1.LabelMetadataName: monitoringNamespace},
				}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(efs.OperatorMetricsPort))}},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{{}},
		},
	}
}

// metricsPod is what the operator's pod needs to serve its metrics with the service CA's
// certificate. The Secret is required: the pod waits the seconds the service CA takes to write
// it, rather than start on a self-signed certificate that library-go would restart the process
// to replace. library-go also restarts it when the certificate rotates.
func metricsPod(p definition.OperatorPod) definition.OperatorPod {
	p.Ports = []corev1.ContainerPort{{Name: efs.OperatorMetricsPortName, ContainerPort: efs.OperatorMetricsPort, Protocol: corev1.ProtocolTCP}}
	p.Volumes = []corev1.Volume{{Name: "metrics-serving-cert", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: efs.OperatorMetricsSecret},
	}}}
	p.VolumeMounts = []corev1.VolumeMount{{Name: "metrics-serving-cert", MountPath: servingCertDir, ReadOnly: true}}
	return p
}
