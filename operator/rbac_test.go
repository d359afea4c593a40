package operator_test

import (
	"context"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// grantBundlePermissions does what OLM does with the newest CSV's permissions and returns a
// client config that authenticates as the operator's ServiceAccount.
func (h *harness) grantBundlePermissions(ctx context.Context) *rest.Config {
	h.t.Helper()
	return fixture.GrantCSVPermissions(ctx, h.t, h.stack.Config, ns)
}

// TestInstallWithTheBundlesPermissions runs the operator with exactly the permissions its
// bundle asks for, through install and uninstall: least privilege that still works.
func TestInstallWithTheBundlesPermissions(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{})
	ctx, cancel := progress.WithStall(context.Background(), 2*time.Minute)
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
