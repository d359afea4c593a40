package testbed

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/olmv1api"
	"github.com/csi-olm/csi-olm/internal/progress"
)

// OLM v1 as the stack runs it: catalogd and operator-controller in OLMv1Namespace, each a
// Deployment on the real node, as a cluster runs them.
const (
	OLMv1Namespace = "olmv1-system"
	// CatalogdService is the Service in front of catalogd: its catalog content server (443)
	// and its mutating webhook (9443).
	CatalogdService = "catalogd-service"
	catalogdName    = "catalogd-controller-manager"
	// OperatorControllerName is operator-controller's Deployment.
	OperatorControllerName = "operator-controller-controller-manager"
	// catalogdWebhookPath is where catalogd serves the webhook that labels every ClusterCatalog
	// with its name, the label ClusterExtensions select catalogs by.
	catalogdWebhookPath = "/mutate-olm-operatorframework-io-v1-clustercatalog"
)

// StartOLMv1 installs OLM v1's CRDs and runs catalogd and operator-controller on the real node
// from images of the tools' binaries. What cert-manager gives them on a cluster comes from a CA
// of the test bed's own: catalogd's serving certificate (content server and webhook), and the
// CA operator-controller checks it with. Both pull images through containers/image, which reads
// /etc/containers/registries.conf: the stack's one sends every upstream registry to the stack's
// registry, as containerd's configuration does for the node.
func (s *Stack) StartOLMv1(ctx context.Context) error {
	if s.host == nil {
		return fmt.Errorf("OLM v1 runs as pods: it needs a stack with a real node")
	}
	s.mu.Lock()
	started := s.olmv1
	s.mu.Unlock()
	if started {
		return nil
	}
	t := s.opts.Tools
	var missing []string
	for _, name := range []string{"operator-controller", "catalogd", "olmv1-crds"} {
		if t.Path(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("OLM v1 needs %s: hack/tools.sh %s builds them", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	crds, err := ReadCRDDir(t.OLMv1CRDs)
	if err != nil {
		return err
	}
	if err := InstallCRDs(ctx, s.Client, crds...); err != nil {
		return err
	}
	if err := s.forwardRegistryToPods(); err != nil {
		return err
	}
	version := filepath.Base(filepath.Dir(t.OperatorController))
	images := map[string]string{}
	for name, bin := range map[string]string{"catalogd": t.Catalogd, "operator-controller": t.OperatorController} {
		binary, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		images[name] = "quay.io/operator-framework/" + name + ":" + version
		if err := s.PushBinaryImage(ctx, images[name], BinaryImage{Binary: binary, Paths: []string{"/" + name}}); err != nil {
			return err
		}
	}
	objs, err := s.olmv1Objects(images)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := s.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	for _, name := range []string{catalogdName, OperatorControllerName} {
		if err := WaitForDeploymentAvailable(ctx, s.Client, OLMv1Namespace, name); err != nil {
			return fmt.Errorf("OLM v1: %w", err)
		}
	}
	s.mu.Lock()
	s.olmv1 = true
	s.mu.Unlock()
	return nil
}

// forwardRegistryToPods makes the stack's registry reachable from pods, at the node's address
// and the registry's port, for what pulls images itself rather than through the kubelet.
func (s *Stack) forwardRegistryToPods() error {
	_, port, _ := net.SplitHostPort(s.Registry)
	_, err := s.startInNetns("registry-forwarder-pods", nil, "socat", forwarderOn(nodeIP, port, "/run/netns/"+s.host.HostNetns, s.Registry)...)
	return err
}

// registriesConf is containers/image's registries.conf for pods: every upstream registry read
// from the stack's registry at the node's address, over plain HTTP.
func (s *Stack) registriesConf() string {
	_, port, _ := net.SplitHostPort(s.Registry)
	return mirrorsConf(net.JoinHostPort(nodeIP, port))
}

// HostRegistriesConf writes, once, the registries.conf a program on this host reads to pull
// every upstream registry's images from the stack's registry, as a disconnected cluster's admin
// mirrors them (CONTAINERS_REGISTRIES_CONF, or csi-olm's load.Registry), and returns its path.
func (s *Stack) HostRegistriesConf() (string, error) {
	path := filepath.Join(s.Dir, "registries.conf")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.WriteFile(path, []byte(mirrorsConf(s.Registry)), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// mirrorsConf is a registries.conf that reads every upstream registry, and unnamed ones, from
// the registry at mirror, over plain HTTP.
func mirrorsConf(mirror string) string {
	var b strings.Builder
	b.WriteString("unqualified-search-registries = []\n")
	for _, u := range Upstreams {
		fmt.Fprintf(&b, "\n[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\n", u, mirror+"/"+u)
	}
	fmt.Fprintf(&b, "\n[[registry]]\nlocation = %q\ninsecure = true\n", mirror)
	return b.String()
}

// olmv1Objects are the objects that run OLM v1: namespace, certificates, registries.conf,
// ServiceAccounts, RBAC, Deployments, catalogd's Service and webhook.
func (s *Stack) olmv1Objects(images map[string]string) ([]client.Object, error) {
	ca, err := newCertAuthority("csi-olm test bed OLM v1")
	if err != nil {
		return nil, err
	}
	dns := CatalogdService + "." + OLMv1Namespace + ".svc"
	certPEM, keyPEM, err := ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: dns},
		DNSNames:    []string{dns, dns + ".cluster.local"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	ns := OLMv1Namespace
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: meta("catalogd-service-cert"), Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.pem()}},
		&corev1.ConfigMap{ObjectMeta: meta("olmv1-ca"), Data: map[string]string{"olm-ca.crt": string(ca.pem())}},
		&corev1.ConfigMap{ObjectMeta: meta("registries-conf"), Data: map[string]string{"registries.conf": s.registriesConf()}},
		&corev1.Service{ObjectMeta: meta(CatalogdService), Spec: corev1.ServiceSpec{
			Selector: map[string]string{"control-plane": catalogdName},
			Ports: []corev1.ServicePort{
				{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)},
				{Name: "webhook", Port: 9443, TargetPort: intstr.FromInt32(9443)},
			},
		}},
		&admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "catalogd-mutating-webhook-configuration"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "inject-metadata-name.olm.operatorframework.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{
					Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: CatalogdService, Path: ptr.To(catalogdWebhookPath), Port: ptr.To[int32](9443)},
					CABundle: ca.pem(),
				},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"olm.operatorframework.io"}, APIVersions: []string{"v1"},
						Resources: []string{"clustercatalogs"}},
				}},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				TimeoutSeconds:          ptr.To[int32](10),
			}},
		},
	}
	for _, c := range []struct {
		name, image string
		args        []string
		volumes     map[string]corev1.VolumeSource
	}{
		{catalogdName, images["catalogd"], []string{
			"--system-namespace=" + ns, "--external-address=" + dns, "--catalogs-server-addr=:8443",
			"--cache-dir=/var/cache/", "--tls-cert=/var/certs/tls.crt", "--tls-key=/var/certs/tls.key",
			"--metrics-bind-address=:7443", "--health-probe-bind-address=:8081",
		}, map[string]corev1.VolumeSource{
			"/var/certs": {Secret: &corev1.SecretVolumeSource{SecretName: "catalogd-service-cert"}},
		}},
		{OperatorControllerName, images["operator-controller"], []string{
			"--system-namespace=" + ns, "--catalogd-cas-dir=/var/certs", "--cache-path=/var/cache",
			"--health-probe-bind-address=:8081",
		}, map[string]corev1.VolumeSource{
			"/var/certs": {ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "olmv1-ca"}}},
		}},
	} {
		c.volumes["/var/cache"] = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		c.volumes["/tmp"] = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		c.volumes["/etc/containers"] = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "registries-conf"}}}
		objs = append(objs,
			&corev1.ServiceAccount{ObjectMeta: meta(c.name)},
			// cluster-admin instead of the upstream manifests' narrower RBAC: the test bed's
			// flows are the installs, not OLM v1's own permissions.
			&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "olmv1-" + c.name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: c.name}},
			},
			olmv1Deployment(c.name, c.image, c.args, c.volumes))
	}
	return objs, nil
}

// olmv1Deployment runs one OLM v1 component as its upstream manifests do: non-root, read-only
// root, its state in emptyDirs, readiness from its health endpoint.
func olmv1Deployment(name, image string, args []string, volumes map[string]corev1.VolumeSource) *appsv1.Deployment {
	labels := map[string]string{"control-plane": name}
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	i := 0
	for _, path := range slices.Sorted(maps.Keys(volumes)) {
		v := fmt.Sprintf("v%d", i)
		i++
		vols = append(vols, corev1.Volume{Name: v, VolumeSource: volumes[path]})
		mounts = append(mounts, corev1.VolumeMount{Name: v, MountPath: path})
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: OLMv1Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: name,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					TerminationGracePeriodSeconds: ptr.To[int64](10),
					Containers: []corev1.Container{{
						Name: "manager", Image: image, Args: args, VolumeMounts: mounts,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8081)}}, PeriodSeconds: 2},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
					Volumes: vols,
				},
			},
		},
	}
}

// OLM v1's API, as the test bed's callers name it.
var (
	ClusterCatalogGVK   = olmv1api.ClusterCatalogGVK
	ClusterExtensionGVK = olmv1api.ClusterExtensionGVK
)

// CatalogNameLabel is the label a ClusterExtension's catalog selector matches on.
const CatalogNameLabel = olmv1api.CatalogNameLabel

// CreateClusterCatalog creates a ClusterCatalog for a catalog image, with a priority, and waits
// until catalogd serves its content.
func (s *Stack) CreateClusterCatalog(ctx context.Context, name, image string, priority int32) error {
	cc := &unstructured.Unstructured{}
	cc.SetGroupVersionKind(ClusterCatalogGVK)
	cc.SetName(name)
	cc.Object["spec"] = map[string]any{
		"priority": int64(priority),
		"source":   map[string]any{"type": "Image", "image": map[string]any{"ref": image}},
	}
	if err := s.Client.Create(ctx, cc); err != nil {
		return fmt.Errorf("creating ClusterCatalog %s: %w", name, err)
	}
	_, err := WaitForOLMv1(ctx, s.Client, ClusterCatalogGVK, name, "Serving", func(u *unstructured.Unstructured) bool {
		return ConditionStatus(u, "Serving") == "True"
	})
	return err
}

// SetClusterCatalogImage points a ClusterCatalog at another catalog image, as an admin does
// when the cluster moves to the next OpenShift minor and its catalogs become that minor's, and
// waits until catalogd serves the new image's content.
func (s *Stack) SetClusterCatalogImage(ctx context.Context, name, image string) error {
	cc := &unstructured.Unstructured{}
	cc.SetGroupVersionKind(ClusterCatalogGVK)
	cc.SetName(name)
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"source": map[string]any{"image": map[string]any{"ref": image}}}})
	if err != nil {
		return err
	}
	if err := s.Client.Patch(ctx, cc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("pointing ClusterCatalog %s at %s: %w", name, image, err)
	}
	_, err = WaitForOLMv1(ctx, s.Client, ClusterCatalogGVK, name, "Serving "+image, func(u *unstructured.Unstructured) bool {
		ref, _, _ := unstructured.NestedString(u.Object, "status", "resolvedSource", "image", "ref")
		return ConditionStatus(u, "Serving") == "True" && ref == image
	})
	return err
}

// WaitForOLMv1 waits until the OLM v1 object of kind gvk and name satisfies cond. On timeout
// the error shows every condition of the object, which says why OLM v1 is stuck.
func WaitForOLMv1(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, name, want string, cond func(*unstructured.Unstructured) bool) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	var getErr error
	var seen progress.Reason
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		getErr = c.Get(ctx, client.ObjectKey{Name: name}, u)
		seen.Revision(ctx, gvk.Kind+" "+name, u.GetResourceVersion(), getErr)
		return getErr == nil && cond(u), nil
	})
	if err != nil {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var lines []string
		for _, c := range conds {
			m, _ := c.(map[string]any)
			lines = append(lines, fmt.Sprintf("  %v=%v (%v): %v", m["type"], m["status"], m["reason"], m["message"]))
		}
		return u, fmt.Errorf("%s %s did not reach %s: %w (get error: %v)\n%s", gvk.Kind, name, want, progress.Cause(ctx), getErr, strings.Join(lines, "\n"))
	}
	return u, nil
}

// ConditionStatus is the status of an OLM v1 object's condition, "" when it has none.
func ConditionStatus(u *unstructured.Unstructured, condition string) string {
	return olmv1api.ConditionField(u, condition, "status")
}

// ConditionMessage is the message of an OLM v1 object's condition, "" when it has none.
func ConditionMessage(u *unstructured.Unstructured, condition string) string {
	return olmv1api.ConditionField(u, condition, "message")
}
