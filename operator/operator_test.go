package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator"
	"github.com/csi-olm/csi-olm/operator/assets"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

func unstructuredOf(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// operands are the objects a Managed CR installs.
func operands() []client.Object {
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller"}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "efs.csi.aws.com"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-sa"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller-sa"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller-metrics"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-efs-csi-driver-trusted-ca-bundle"}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller-pdb"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "efs-csi-external-provisioner-role"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "efs-csi-provisioner-binding"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "efs-csi-privileged-role"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "efs-csi-node-privileged-binding"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "efs-csi-kube-rbac-proxy-role"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "efs-csi-kube-rbac-proxy-binding"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-lease-role"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-lease-binding"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-prometheus"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-prometheus"}},
		unstructuredOf(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}, ns, "efs-csi-controller-monitor"),
		// The CredentialsRequests last, the controller's at the very end.
		unstructuredOf(schema.GroupVersionKind{Group: "cloudcredential.openshift.io", Version: "v1", Kind: "CredentialsRequest"}, "openshift-cloud-credential-operator", "openshift-aws-efs-csi-driver-node"),
		unstructuredOf(schema.GroupVersionKind{Group: "cloudcredential.openshift.io", Version: "v1", Kind: "CredentialsRequest"}, "openshift-cloud-credential-operator", "openshift-aws-efs-csi-driver"),
	}
}

// manualModeOperands are the operands a Managed CR installs when the cloud-credential operator
// is in Manual mode and no IAM role is given: no CredentialsRequest is made.
func manualModeOperands() []client.Object {
	all := operands()
	return all[:len(all)-2]
}

// TestOperandsAreEveryShippedManifest keeps operands(), which the install and removal tests
// check, to the manifests the operator applies and an uninstall deletes: a manifest added to the
// assets is then checked too.
func TestOperandsAreEveryShippedManifest(t *testing.T) {
	read := assets.For(ns)
	var shipped, listed []string
	for _, f := range assets.OperandFiles {
		raw, err := read(f)
		must(t, err)
		var u unstructured.Unstructured
		must(t, yaml.Unmarshal(raw, &u.Object))
		shipped = append(shipped, u.GetKind()+" "+u.GetName())
	}
	scheme := testbed.Scheme
	for _, obj := range operands() {
		gvks, _, err := scheme.ObjectKinds(obj)
		must(t, err)
		listed = append(listed, gvks[0].Kind+" "+obj.GetName())
	}
	slices.Sort(shipped)
	slices.Sort(listed)
	if !slices.Equal(shipped, listed) {
		t.Errorf("operands() lists %q, the operator ships %q", listed, shipped)
	}
}

// actAsCloudCredentialOperator mints the secret a CredentialsRequest asks for, as the
// cloud-credential operator does on a real cluster.
func (h *harness) actAsCloudCredentialOperator(ctx context.Context) {
	h.t.Helper()
	cr := unstructuredOf(schema.GroupVersionKind{Group: "cloudcredential.openshift.io", Version: "v1", Kind: "CredentialsRequest"}, "openshift-cloud-credential-operator", "openshift-aws-efs-csi-driver")
	must(h.t, eventually(ctx, "the CredentialsRequest", h.exists(cr)))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-efs-cloud-credentials"},
		StringData: map[string]string{"credentials": "[default]\naws_access_key_id = test\naws_secret_access_key = test\n"},
	}
	must(h.t, h.c.Create(ctx, secret))
}

func TestInstallFromNothing(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{})
	ctx, cancel := progress.WithStall(context.Background(), 3*time.Minute)
	defer cancel()
	versions := h.recordWorkloads(ctx)
	h.runOperator()
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	h.actAsCloudCredentialOperator(ctx)

	for _, obj := range operands() {
		must(t, eventually(ctx, "operand "+obj.GetName(), h.exists(obj)))
		// Nothing ties the driver to the operator: uninstalling the operator (its CSV) leaves
		// every operand object, and so every volume, working.
		if refs := obj.GetOwnerReferences(); len(refs) > 0 {
			t.Errorf("%T %s has owner references %v", obj, obj.GetName(), refs)
		}
		for k := range obj.GetLabels() {
			if strings.HasPrefix(k, "olm.") || strings.HasPrefix(k, "operators.coreos.com/") {
				t.Errorf("%T %s carries OLM's label %s", obj, obj.GetName(), k)
			}
		}
	}
	must(t, eventually(ctx, "controller Deployment available", h.available(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller"}})))
	must(t, eventually(ctx, "node DaemonSet available", h.available(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}})))
	for _, c := range []string{"AWSEFSDriverControllerServiceControllerAvailable", "AWSEFSDriverNodeServiceControllerAvailable"} {
		must(t, eventually(ctx, c, h.conditionIs(c, operatorv1.ConditionTrue)))
	}
	for _, c := range []string{"AWSEFSDriverControllerServiceControllerDegraded", "AWSEFSDriverNodeServiceControllerDegraded", "AWSEFSDriverStaticResourcesControllerDegraded", "AWSEFSDriverUninstallDegraded"} {
		must(t, eventually(ctx, c, h.conditionIs(c, operatorv1.ConditionFalse)))
	}
	cr, err := h.cr(ctx)
	must(t, err)
	if !slices.Contains(cr.Finalizers, operator.UninstallFinalizer) {
		t.Errorf("finalizers %v lack %s", cr.Finalizers, operator.UninstallFinalizer)
	}

	var deploy appsv1.Deployment
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "efs-csi-controller"}, &deploy))
	var ds appsv1.DaemonSet
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "efs-csi-node"}, &ds))
	want := map[string]string{
		"csi-driver": fixture.Images[efs.DriverImageEnv], "csi-provisioner": fixture.Images[efs.ProvisionerImageEnv],
		"provisioner-kube-rbac-proxy": fixture.Images["KUBE_RBAC_PROXY_IMAGE"], "liveness-probe": fixture.Images["LIVENESS_PROBE_IMAGE"],
	}
	for _, c := range deploy.Spec.Template.Spec.Containers {
		if c.Image != want[c.Name] {
			t.Errorf("controller container %s runs %s, want %s", c.Name, c.Image, want[c.Name])
		}
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			t.Errorf("controller container %s is privileged: only the node DaemonSet may be", c.Name)
		}
	}
	// Every version counts, not only the last: the cluster runs pods from each one it is given.
	all := append(versions(), workloadVersion{"Deployment", deploy.Name, deploy.ResourceVersion, deploy.Spec.Template.Spec})
	if len(all) < 3 {
		t.Errorf("recorded %d versions of the operand workloads, want the Deployment's and the DaemonSet's at least", len(all)-1)
	}
	reported := map[string]bool{}
	for _, v := range all {
		for _, p := range unfilledPlaceholders(v.pod) {
			// A status update repeats the spec: each problem is reported at its first version.
			if key := v.kind + "/" + v.name + ": " + p; !reported[key] {
				reported[key] = true
				t.Errorf("%s %s from resourceVersion %s: %s", v.kind, v.name, v.resourceVersion, p)
			}
		}
	}
	// Rotating the credentials changes the pod template, which restarts the controller.
	before := credentialsHash(&deploy)
	if before == "" {
		t.Errorf("the controller's pod template does not follow its credentials: annotations %v", deploy.Spec.Template.Annotations)
	}
	var secret corev1.Secret
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "aws-efs-cloud-credentials"}, &secret))
	secret.Data["credentials"] = []byte("[default]\naws_access_key_id = rotated\naws_secret_access_key = rotated\n")
	must(t, h.c.Update(ctx, &secret))
	must(t, eventually(ctx, "a restart after the credentials rotate", func(ctx context.Context) error {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(&deploy), &deploy); err != nil {
			return err
		}
		if credentialsHash(&deploy) == before {
			return fmt.Errorf("pod template still has the old credentials hash")
		}
		return nil
	}))
	if *deploy.Spec.Replicas != 2 {
		t.Errorf("a highly available control plane gets %d controller replicas, want 2", *deploy.Spec.Replicas)
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == "efs-plugin" && c.Image != fixture.Images[efs.DriverImageEnv] {
			t.Errorf("node driver runs %s", c.Image)
		}
	}
}

func TestSingleNodeRunsOneControllerReplica(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{SingleNode: true, CredentialsMode: operatorv1.CloudCredentialsModeManual})
	h.runOperator()
	ctx, cancel := progress.WithStall(context.Background(), time.Minute)
	defer cancel()
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-controller"}}
	must(t, eventually(ctx, "controller Deployment", h.exists(deploy)))
	if *deploy.Spec.Replicas != 1 {
		t.Errorf("single-node cluster gets %d controller replicas, want 1", *deploy.Spec.Replicas)
	}
	// Manual credentials without an STS role: no CredentialsRequest is made.
	cr := operands()[len(operands())-1]
	if err := h.c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err == nil {
		t.Error("a CredentialsRequest was created in Manual credentials mode without ROLEARN")
	}
}

// unfilledPlaceholders lists the containers' arguments and environment values that still hold a
// ${...} placeholder of the shipped manifests.
func unfilledPlaceholders(pod corev1.PodSpec) []string {
	var found []string
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		for _, a := range append(slices.Clone(c.Command), c.Args...) {
			if strings.Contains(a, "${") {
				found = append(found, fmt.Sprintf("container %s has argument %q", c.Name, a))
			}
		}
		for _, e := range c.Env {
			if strings.Contains(e.Value, "${") {
				found = append(found, fmt.Sprintf("container %s has %s=%q", c.Name, e.Name, e.Value))
			}
		}
	}
	return found
}

// credentialsHash is the pod-template annotation library-go derives from the credentials secret.
func credentialsHash(d *appsv1.Deployment) string {
	for k, v := range d.Spec.Template.Annotations {
		if strings.HasPrefix(k, "operator.openshift.io/dep-") {
			return v
		}
	}
	return ""
}
