package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/migrate/subscription"
	"github.com/csi-olm/csi-olm/testbed"
)

// grantOnly makes a user who may only find the Subscription and the catalog, not change them.
func grantOnly(ctx context.Context, t *testing.T, s *testbed.Stack, user string) *rest.Config {
	t.Helper()
	c := s.Client
	must(t, c.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"operators.coreos.com"}, Resources: []string{"subscriptions", "catalogsources", "clusterserviceversions"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}},
		},
	}))
	must(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))
	config := rest.CopyConfig(s.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user}
	return config
}

// TestMigrateSubscriptionFailureSaysHowToRestore stops a migration after the switch, as a
// timeout does, and checks that the printed restore command puts the Subscription back.
func TestMigrateSubscriptionFailureSaysHowToRestore(t *testing.T) {
	t.Parallel()
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	f := startOLMFixture(ctx, t)
	c := f.stack.Client
	f.installCommunity(ctx, t)
	var original operatorsv1alpha1.Subscription
	must(t, c.Get(ctx, client.ObjectKey{Namespace: testbed.OperatorsNamespace, Name: efsPackage}, &original))

	var out bytes.Buffer
	opts := options(f.stack, false, &out)
	opts.Timeout = time.Millisecond
	err := (&subscription.Migrate{Options: opts, Source: certifiedSource, SourceNamespace: testbed.OLMNamespace}).Run(ctx)
	if err == nil {
		t.Fatalf("the upgrade cannot finish in 1ms, yet the migration succeeded:\n%s", out.String())
	}
	if !strings.Contains(err.Error(), "step follow-upgrade: gave up waiting for the upgrade to "+certifiedHeadCSV) {
		t.Errorf("the error does not say where it stopped:\n%v", err)
	}
	restoreFromError(ctx, t, c, err, &original)
}
