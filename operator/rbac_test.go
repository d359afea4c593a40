package operator_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// headCSV is the supported operator's newest bundle: its permissions are what OLM grants.
const headCSV = "../bundle/aws-efs-operator/4.11.0/manifests/aws-efs-csi-driver-operator.v4.11.0.clusterserviceversion.yaml"

// grantBundlePermissions does what OLM does with the CSV's permissions: a ServiceAccount, a
// ClusterRole for clusterPermissions and a Role in the operator's namespace for permissions.
// It returns a client config that authenticates as that ServiceAccount.
func (h *harness) grantBundlePermissions(ctx context.Context) *rest.Config {
	h.t.Helper()
	raw, err := os.ReadFile(filepath.FromSlash(headCSV))
	must(h.t, err)
	var csv v1alpha1.ClusterServiceVersion
	must(h.t, yaml.Unmarshal(raw, &csv))
	strategy := csv.Spec.InstallStrategy.StrategySpec
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.OperatorName}}
	must(h.t, h.c.Create(ctx, sa))
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}}
	for _, p := range strategy.ClusterPermissions {
		must(h.t, h.c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "csv-" + p.ServiceAccountName}, Rules: p.Rules}))
		must(h.t, h.c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "csv-" + p.ServiceAccountName}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "csv-" + p.ServiceAccountName},
		}))
	}
	for _, p := range strategy.Permissions {
		must(h.t, h.c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "csv-" + p.ServiceAccountName}, Rules: p.Rules}))
		must(h.t, h.c.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "csv-" + p.ServiceAccountName}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "csv-" + p.ServiceAccountName},
		}))
	}
	token, err := h.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	must(h.t, err)
	config := rest.AnonymousClientConfig(h.stack.Config)
	config.BearerToken = token.Status.Token
	return config
}

// TestInstallWithTheBundlesPermissions runs the operator with exactly the permissions its
// bundle asks for, through install and uninstall: least privilege that still works.
func TestInstallWithTheBundlesPermissions(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h.runOperatorAs(h.grantBundlePermissions(ctx))
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	h.actAsCloudCredentialOperator(ctx)
	for _, obj := range operands() {
		must(t, eventually(ctx, "operand "+obj.GetName(), h.exists(obj)))
	}
	for _, c := range []string{"AWSEFSDriverStaticResourcesControllerDegraded", "AWSEFSDriverControllerServiceControllerDegraded", "AWSEFSDriverNodeServiceControllerDegraded", "AWSEFSDriverCredentialsRequestControllerDegraded"} {
		must(t, eventually(ctx, c+"=False", func(ctx context.Context) error {
			err := h.conditionIs(c, operatorv1.ConditionFalse)(ctx)
			if err != nil && c == "AWSEFSDriverCredentialsRequestControllerDegraded" {
				// This controller reports no Degraded condition when it succeeds.
				return h.conditionIs("AWSEFSDriverCredentialsRequestControllerAvailable", operatorv1.ConditionTrue)(ctx)
			}
			return err
		}))
	}
	cr, err := h.cr(ctx)
	must(t, err)
	must(t, h.c.Delete(ctx, cr))
	for _, obj := range operands() {
		must(t, eventually(ctx, "removal of "+obj.GetName(), h.gone(obj)))
	}
	// The removal went through the fence, which these permissions put up.
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: efs.RemovalFence}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: efs.RemovalFence}},
	} {
		must(t, h.exists(obj)(ctx))
	}
}
