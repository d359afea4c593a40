package operator_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestClusterSettingsReachTheDriver checks library-go's hooks end to end: the cluster proxy and
// the trusted CA bundle reach the driver's pods, and spec.logLevel sets their verbosity.
func TestClusterSettingsReachTheDriver(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	var proxy configv1.Proxy
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "cluster"}, &proxy))
	proxy.Status = configv1.ProxyStatus{HTTPProxy: "http://proxy.example:3128", HTTPSProxy: "http://proxy.example:3128", NoProxy: ".cluster.local"}
	must(t, h.c.Status().Update(ctx, &proxy))
	var ca corev1.ConfigMap
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-efs-csi-driver-trusted-ca-bundle"}, &ca))
	ca.Data = map[string]string{"ca-bundle.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}
	must(t, h.c.Update(ctx, &ca)) // what OpenShift's CA injection does
	cr, err := h.cr(ctx)
	must(t, err)
	patch := client.MergeFrom(cr.DeepCopy())
	cr.Spec.LogLevel = operatorv1.Debug
	must(t, h.c.Patch(ctx, cr, patch))

	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}},
	} {
		must(t, eventually(ctx, "proxy, CA and log level in "+obj.GetName(), func(ctx context.Context) error {
			if err := h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			var pod corev1.PodSpec
			switch o := obj.(type) {
			case *appsv1.Deployment:
				pod = o.Spec.Template.Spec
			case *appsv1.DaemonSet:
				pod = o.Spec.Template.Spec
			}
			driver := pod.Containers[0]
			env := fmt.Sprint(driver.Env)
			switch {
			case !strings.Contains(env, "http://proxy.example:3128"):
				return fmt.Errorf("no proxy in %s env %s", driver.Name, env)
			case !slices.Contains(driver.Args, "--v=4"):
				return fmt.Errorf("%s args %v lack --v=4 (Debug)", driver.Name, driver.Args)
			case !hasVolumeFromConfigMap(pod, "aws-efs-csi-driver-trusted-ca-bundle"):
				return fmt.Errorf("the trusted CA bundle is not mounted")
			}
			return nil
		}))
	}
}

func hasVolumeFromConfigMap(pod corev1.PodSpec, name string) bool {
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == name {
			return true
		}
	}
	return false
}

// TestSTSCredentialsRequest: with manual credentials and an IAM role, the operator asks the
// cloud-credential operator for an STS web-identity configuration.
func TestSTSCredentialsRequest(t *testing.T) {
	fixture.SetOperatorEnv(t)
	t.Setenv("ROLEARN", "arn:aws:iam::123456789012:role/efs-csi")
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	h.runOperator()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	cr := unstructuredOf(schema.GroupVersionKind{Group: "cloudcredential.openshift.io", Version: "v1", Kind: "CredentialsRequest"}, "openshift-cloud-credential-operator", "openshift-aws-efs-csi-driver")
	must(t, eventually(ctx, "the CredentialsRequest", h.exists(cr)))
	spec := fmt.Sprint(cr.Object["spec"])
	for _, want := range []string{"stsIAMRoleARN:arn:aws:iam::123456789012:role/efs-csi", "cloudTokenPath:/var/run/secrets/openshift/serviceaccount/token", "namespace:" + ns} {
		if !strings.Contains(spec, want) {
			t.Errorf("CredentialsRequest spec lacks %s: %s", want, spec)
		}
	}
}

// TestDriverTagsFollowTheClusterID: the driver tags what it creates with the cluster's ID from
// Infrastructure/cluster, and follows a change of that ID, with exactly one --tags argument.
func TestDriverTagsFollowTheClusterID(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	var infra configv1.Infrastructure
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "cluster"}, &infra))
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}}
	tagsAre := func(want string) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := h.c.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
				return err
			}
			var tags []string
			for _, a := range deployment.Spec.Template.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--tags=") {
					tags = append(tags, a)
				}
			}
			if !slices.Equal(tags, []string{want}) {
				return fmt.Errorf("the driver's tags are %q, want %q", tags, want)
			}
			return nil
		}
	}
	must(t, eventually(ctx, "the cluster's tag", tagsAre("--tags=kubernetes.io/cluster/"+infra.Status.InfrastructureName+":owned")))

	infra.Status.InfrastructureName = "renamed-x7k2p"
	must(t, h.c.Status().Update(ctx, &infra))
	must(t, eventually(ctx, "the renamed cluster's tag", tagsAre("--tags=kubernetes.io/cluster/renamed-x7k2p:owned")))
}

// TestARotatedMetricsCertificateRestartsTheController: kube-rbac-proxy reads its serving
// certificate only at start, so a new certificate must change the controller's pod template.
func TestARotatedMetricsCertificateRestartsTheController(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}}
	hashes := func() (map[string]string, error) {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
			return nil, err
		}
		dep := map[string]string{}
		for k, v := range deployment.Spec.Template.Annotations {
			if strings.HasPrefix(k, "operator.openshift.io/dep-") {
				dep[k] = v
			}
		}
		return dep, nil
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller-metrics-serving-cert"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: []byte("first"), corev1.TLSPrivateKeyKey: []byte("first")},
	}
	must(t, h.c.Create(ctx, secret))
	var before map[string]string
	must(t, eventually(ctx, "the pod template carries the certificate's hash", func(ctx context.Context) (err error) {
		before, err = hashes()
		// In Manual credentials mode there is no credentials Secret, so the certificate's is the
		// only hash.
		if err == nil && len(before) == 0 {
			return fmt.Errorf("no hash annotation")
		}
		return err
	}))
	secret.Data = map[string][]byte{corev1.TLSCertKey: []byte("rotated"), corev1.TLSPrivateKeyKey: []byte("rotated")}
	must(t, h.c.Update(ctx, secret))
	must(t, eventually(ctx, "the pod template changes with the certificate", func(ctx context.Context) error {
		after, err := hashes()
		if err != nil {
			return err
		}
		if maps.Equal(after, before) {
			return fmt.Errorf("hash annotations unchanged: %v", after)
		}
		return nil
	}))
}

// TestKubeRBACProxyFollowsTheClusterTLSProfile backs the CSV's tls-profiles claim: the driver's
// metrics endpoint serves with the TLS profile of APIServer/cluster, and follows a change of it.
func TestKubeRBACProxyFollowsTheClusterTLSProfile(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}}
	minVersionIs := func(want string) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := h.c.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
				return err
			}
			for _, c := range deployment.Spec.Template.Spec.Containers {
				if c.Name == "provisioner-kube-rbac-proxy" {
					if !slices.Contains(c.Args, "--tls-min-version="+want) {
						return fmt.Errorf("kube-rbac-proxy args %q lack --tls-min-version=%s", c.Args, want)
					}
					return nil
				}
			}
			return fmt.Errorf("no kube-rbac-proxy container")
		}
	}
	must(t, eventually(ctx, "the default (Intermediate) profile", minVersionIs(string(configv1.VersionTLS12))))

	var apiServer configv1.APIServer
	must(t, h.c.Get(ctx, client.ObjectKey{Name: "cluster"}, &apiServer))
	apiServer.Spec.TLSSecurityProfile = &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType, Modern: &configv1.ModernTLSProfile{}}
	must(t, h.c.Update(ctx, &apiServer))
	must(t, eventually(ctx, "the Modern profile", minVersionIs(string(configv1.VersionTLS13))))
}
