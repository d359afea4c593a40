package operator_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
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
			pod := podSpecOf(obj)
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
	h, ctx := newManualModeWithRoles(t, "ROLEARN", "arn:aws:iam::123456789012:role/efs-csi")
	gvk := schema.GroupVersionKind{Group: "cloudcredential.openshift.io", Version: "v1", Kind: "CredentialsRequest"}
	cr := unstructuredOf(gvk, "openshift-cloud-credential-operator", "openshift-aws-efs-csi-driver")
	must(t, eventually(ctx, "the CredentialsRequest", h.exists(cr)))
	spec := fmt.Sprint(cr.Object["spec"])
	for _, want := range []string{"stsIAMRoleARN:arn:aws:iam::123456789012:role/efs-csi", "cloudTokenPath:/var/run/secrets/openshift/serviceaccount/token", "namespace:" + ns} {
		if !strings.Contains(spec, want) {
			t.Errorf("CredentialsRequest spec lacks %s: %s", want, spec)
		}
	}
	// The node's request waits for a role of its own: made with ROLEARN alone, it would ask
	// for the controller's role.
	node := unstructuredOf(gvk, "openshift-cloud-credential-operator", "openshift-aws-efs-csi-driver-node")
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(node), node); !apierrors.IsNotFound(err) {
		t.Errorf("the node's CredentialsRequest without NODE_ROLEARN: %v, want none", err)
	}
}

// TestNodeSTSCredentialsRequest: with NODE_ROLEARN set in manual mode, the node plugin's
// CredentialsRequest asks for an STS configuration of that role, for the node's ServiceAccount.
func TestNodeSTSCredentialsRequest(t *testing.T) {
	h, ctx := newManualModeWithRoles(t, "ROLEARN", "arn:aws:iam::123456789012:role/efs-csi", "NODE_ROLEARN", "arn:aws:iam::123456789012:role/efs-csi-node")
	node := unstructuredOf(schema.GroupVersionKind{Group: "cloudcredential.openshift.io", Version: "v1", Kind: "CredentialsRequest"}, "openshift-cloud-credential-operator", "openshift-aws-efs-csi-driver-node")
	must(t, eventually(ctx, "the node's CredentialsRequest", h.exists(node)))
	spec := fmt.Sprint(node.Object["spec"])
	for _, want := range []string{"stsIAMRoleARN:arn:aws:iam::123456789012:role/efs-csi-node", "cloudTokenPath:/var/run/secrets/openshift/serviceaccount/token",
		"name:node-aws-efs-cloud-credentials namespace:" + ns, "serviceAccountNames:[efs-csi-sa]"} {
		if !strings.Contains(spec, want) {
			t.Errorf("the node's CredentialsRequest spec lacks %s: %s", want, spec)
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
	tagsAre := func(want string) func(context.Context) error { return h.driverArgsAre(deployment, "--tags=", want) }
	must(t, eventually(ctx, "the cluster's tag", tagsAre("--tags=kubernetes.io/cluster/"+infra.Status.InfrastructureName+":owned")))

	infra.Status.InfrastructureName = "renamed-x7k2p"
	must(t, h.c.Status().Update(ctx, &infra))
	must(t, eventually(ctx, "the renamed cluster's tag", tagsAre("--tags=kubernetes.io/cluster/renamed-x7k2p:owned")))

	// The cluster's user-defined tags come first, quoted where the driver would split them; a
	// user tag cannot take over the cluster's own.
	if infra.Status.PlatformStatus == nil {
		infra.Status.PlatformStatus = &configv1.PlatformStatus{Type: configv1.AWSPlatformType}
	}
	infra.Status.PlatformStatus.AWS = &configv1.AWSPlatformStatus{Region: "us-east-1", ResourceTags: []configv1.AWSResourceTag{
		{Key: "cost-center", Value: "storage"},
		{Key: "team name", Value: "a:b"},
		{Key: "kubernetes.io/cluster/renamed-x7k2p", Value: "shared"},
	}}
	must(t, h.c.Status().Update(ctx, &infra))
	must(t, eventually(ctx, "the cluster's user tags", tagsAre("--tags=cost-center:storage 'team name':'a:b' kubernetes.io/cluster/renamed-x7k2p:owned")))
}

// TestVolumeMetricsFollowTheClusterCSIDriver: spec.driverConfig.aws.efsVolumeMetrics of the
// ClusterCSIDriver sets the node plugin's volume metrics flags, and turning it off takes them
// back to the default.
func TestVolumeMetricsFollowTheClusterCSIDriver(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}}
	flagsAre := func(want ...string) func(context.Context) error {
		return h.driverArgsAre(ds, "--vol-metrics-", want...)
	}
	must(t, eventually(ctx, "volume metrics off by default", flagsAre("--vol-metrics-opt-in=false")))
	setMetrics := func(m *operatorv1.AWSEFSVolumeMetrics) {
		t.Helper()
		cr, err := h.cr(ctx)
		must(t, err)
		patch := client.MergeFrom(cr.DeepCopy())
		cr.Spec.DriverConfig = operatorv1.CSIDriverConfigSpec{DriverType: operatorv1.AWSDriverType, AWS: &operatorv1.AWSCSIDriverConfigSpec{EFSVolumeMetrics: m}}
		must(t, h.c.Patch(ctx, cr, patch))
	}
	setMetrics(&operatorv1.AWSEFSVolumeMetrics{State: operatorv1.AWSEFSVolumeMetricsRecursiveWalk,
		RecursiveWalk: &operatorv1.AWSEFSVolumeMetricsRecursiveWalkConfig{RefreshPeriodMinutes: 60, FSRateLimit: 10}})
	must(t, eventually(ctx, "volume metrics by recursive walk", flagsAre("--vol-metrics-opt-in=true", "--vol-metrics-refresh-period=60", "--vol-metrics-fs-rate-limit=10")))
	setMetrics(&operatorv1.AWSEFSVolumeMetrics{State: operatorv1.AWSEFSVolumeMetricsRecursiveWalk})
	must(t, eventually(ctx, "volume metrics with the driver's defaults", flagsAre("--vol-metrics-opt-in=true")))
	setMetrics(&operatorv1.AWSEFSVolumeMetrics{State: operatorv1.AWSEFSVolumeMetricsDisabled})
	must(t, eventually(ctx, "volume metrics off again", flagsAre("--vol-metrics-opt-in=false")))
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

// TestFIPSModeReachesTheDriver: both driver containers get FIPS_ENABLED, once, saying whether
// this machine's kernel runs in FIPS mode, which the operator's pod shares with its node.
func TestFIPSModeReachesTheDriver(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	want := "false"
	if raw, err := os.ReadFile("/proc/sys/crypto/fips_enabled"); err == nil && strings.TrimSpace(string(raw)) == "1" {
		want = "true"
	}
	for _, tc := range []struct {
		obj       client.Object
		container string
	}{
		{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}}, "csi-driver"},
		{&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}}, "efs-plugin"},
	} {
		must(t, eventually(ctx, "FIPS_ENABLED in "+tc.obj.GetName(), func(ctx context.Context) error {
			if err := h.c.Get(ctx, client.ObjectKeyFromObject(tc.obj), tc.obj); err != nil {
				return err
			}
			var got []string
			for _, c := range podSpecOf(tc.obj).Containers {
				for _, e := range c.Env {
					if e.Name == "FIPS_ENABLED" {
						got = append(got, c.Name+"="+e.Value)
					}
				}
			}
			if !slices.Equal(got, []string{tc.container + "=" + want}) {
				return fmt.Errorf("FIPS_ENABLED is %q, want only %s=%s", got, tc.container, want)
			}
			return nil
		}))
	}
}

// podSpecOf is the pod template of a Deployment or a DaemonSet.
func podSpecOf(obj client.Object) corev1.PodSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Template.Spec
	case *appsv1.DaemonSet:
		return o.Spec.Template.Spec
	}
	panic(fmt.Sprintf("no pod template in %T", obj))
}

// driverArgsAre checks that the driver container of obj (the first) has exactly the arguments
// want among those with the prefix, in that order.
func (h *harness) driverArgsAre(obj client.Object, prefix string, want ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		var got []string
		for _, a := range podSpecOf(obj).Containers[0].Args {
			if strings.HasPrefix(a, prefix) {
				got = append(got, a)
			}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s's driver has %q, want %q", obj.GetName(), got, want)
		}
		return nil
	}
}

// newManualModeWithRoles runs the operator with the cloud-credential operator in Manual mode and
// the given variables (name, value, ...) set, and a Managed CR.
func newManualModeWithRoles(t *testing.T, env ...string) (*harness, context.Context) {
	t.Helper()
	fixture.SetOperatorEnv(t)
	for i := 0; i+1 < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	h.runOperator()
	ctx, cancel := progress.WithStall(context.Background(), time.Minute)
	t.Cleanup(cancel)
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	return h, ctx
}
