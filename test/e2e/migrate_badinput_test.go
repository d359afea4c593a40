package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/migrate/cso"
	"github.com/csi-olm/csi-olm/migrate/subscription"
	"github.com/csi-olm/csi-olm/testbed"
)

// serveEdgelessCatalog serves a catalog whose aws-efs-operator stable channel holds only the
// supported head, with no replaces, skips or skipRange: nothing upgrades from the community CSV.
func serveEdgelessCatalog(ctx context.Context, t *testing.T, s *testbed.Stack, name string) {
	t.Helper()
	certified, err := declcfg.LoadFS(ctx, os.DirFS(filepath.Join("..", "..", "catalog", "certified")))
	must(t, err)
	var cfg declcfg.DeclarativeConfig
	for _, p := range certified.Packages {
		if p.Name == efsPackage {
			p.DefaultChannel = "stable"
			cfg.Packages = append(cfg.Packages, p)
		}
	}
	cfg.Channels = []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: efsPackage, Name: "stable", Entries: []declcfg.ChannelEntry{{Name: certifiedHeadCSV}}}}
	for _, b := range certified.Bundles {
		if b.Name == certifiedHeadCSV {
			cfg.Bundles = append(cfg.Bundles, b)
		}
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "catalog.json"))
	must(t, err)
	must(t, declcfg.WriteJSON(cfg, f))
	must(t, f.Close())
	addr, err := s.ServeCatalog(ctx, name, dir)
	must(t, err)
	must(t, s.CreateCatalogSource(ctx, testbed.OLMNamespace, name, addr))
}

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

// TestMigrateRefusesBadInput runs each verb on input it must refuse, and checks that the error
// names what is wrong and that nothing on the cluster changed.
func TestMigrateRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := startOLMFixture(ctx, t)
	s, c := f.stack, f.stack.Client
	f.installCommunity(ctx, t)
	ebs := olmEraDrivers()[0]
	installOLMEraDrivers(ctx, t, f, ebs)
	serveEdgelessCatalog(ctx, t, s, "edgeless")
	viewer := grantOnly(ctx, t, s, "viewer")

	migrateSub := func(edit func(*subscription.Migrate)) func(*bytes.Buffer) error {
		return func(out *bytes.Buffer) error {
			m := &subscription.Migrate{Options: options(s, true, out), Source: certifiedSource, SourceNamespace: testbed.OLMNamespace}
			edit(m)
			return m.Run(ctx)
		}
	}
	migrateCSO := func(edit func(*cso.Migrate)) func(*bytes.Buffer) error {
		return func(out *bytes.Buffer) error {
			m := &cso.Migrate{Options: options(s, true, out), Driver: "ebs", AcceptNamespaceMove: true}
			edit(m)
			return m.Run(ctx)
		}
	}
	create := func(objects ...client.Object) func(t *testing.T) {
		return func(t *testing.T) {
			for _, o := range objects {
				must(t, c.Create(ctx, o))
			}
			t.Cleanup(func() {
				for _, o := range objects {
					_ = c.Delete(context.Background(), o)
				}
			})
		}
	}
	sub := func(namespace, pkg, source string) *operatorsv1alpha1.Subscription {
		return &operatorsv1alpha1.Subscription{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pkg},
			Spec:       &operatorsv1alpha1.SubscriptionSpec{Package: pkg, Channel: "stable", CatalogSource: source, CatalogSourceNamespace: testbed.OLMNamespace},
		}
	}
	cases := []struct {
		name  string
		setup func(t *testing.T)
		run   func(*bytes.Buffer) error
		want  []string
	}{{
		name: "unknown driver",
		run:  migrateCSO(func(m *cso.Migrate) { m.Driver = "gce-pd" }),
		want: []string{`unknown driver "gce-pd": use ebs or manila`},
	}, {
		name: "package not installed",
		run:  migrateCSO(func(m *cso.Migrate) { m.Driver = "manila"; m.DryRun = false }),
		want: []string{"package manila-csi-driver-operator is not installed: no Subscription in any namespace names it"},
	}, {
		name:  "Subscription that installed nothing",
		setup: create(sub(testbed.OperatorsNamespace, "manila-csi-driver-operator", "no-such-catalog")),
		run:   migrateCSO(func(m *cso.Migrate) { m.Driver = "manila"; m.DryRun = false }),
		want:  []string{"Subscription operators/manila-csi-driver-operator has no current CSV", "source=olm/no-such-catalog"},
	}, {
		name: "EBS without accepting the namespace move",
		run:  migrateCSO(func(m *cso.Migrate) { m.AcceptNamespaceMove = false; m.DryRun = false }),
		want: []string{"does not adopt the running EBS driver", "--accept-namespace-move", "nothing was changed"},
	}, {
		name: "target catalog missing",
		run:  migrateSub(func(m *subscription.Migrate) { m.Source = "redhat-operators"; m.DryRun = false }),
		want: []string{"CatalogSource olm/redhat-operators not found"},
	}, {
		name: "target catalog not READY",
		setup: create(&operatorsv1alpha1.CatalogSource{
			ObjectMeta: metav1.ObjectMeta{Namespace: testbed.OLMNamespace, Name: "unreachable"},
			Spec:       operatorsv1alpha1.CatalogSourceSpec{SourceType: operatorsv1alpha1.SourceTypeGrpc, Address: "127.0.0.1:1"},
		}),
		run:  migrateSub(func(m *subscription.Migrate) { m.Source = "unreachable"; m.DryRun = false }),
		want: []string{"CatalogSource olm/unreachable is not READY"},
	}, {
		name: "no upgrade edge",
		run:  migrateSub(func(m *subscription.Migrate) { m.Source = "edgeless"; m.DryRun = false }),
		want: []string{"no bundle in channel stable of package aws-efs-operator in catalog olm/edgeless upgrades from the installed aws-efs-operator.v0.0.8 (version 0.0.8)"},
	}, {
		name: "channel missing in the target",
		run:  migrateSub(func(m *subscription.Migrate) { m.Channel = "fast"; m.DryRun = false }),
		want: []string{`package aws-efs-operator in catalog olm/certified-operators has no channel "fast": its channels are preview, stable`},
	}, {
		name: "already on the target catalog",
		run:  migrateSub(func(m *subscription.Migrate) { m.Source = communitySource; m.DryRun = false }),
		want: []string{"Subscription operators/aws-efs-operator already uses catalog olm/community-operators, channel stable: there is nothing to migrate"},
	}, {
		name: "two Subscriptions for one package",
		setup: create(
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "second"}},
			sub("second", efsPackage, communitySource),
		),
		run:  migrateSub(func(m *subscription.Migrate) { m.DryRun = false }),
		want: []string{"package aws-efs-operator has 2 Subscriptions", "operators/aws-efs-operator", "second/aws-efs-operator"},
	}, {
		name: "user lacks RBAC",
		run:  migrateSub(func(m *subscription.Migrate) { m.Config = viewer; m.DryRun = false }),
		want: []string{"you lack", "update subscriptions.operators.coreos.com in namespace operators", "create configmaps in namespace operators", "nothing was changed"},
	}, {
		name: "user lacks the port-forward to a catalog served in the cluster",
		setup: create(&operatorsv1alpha1.CatalogSource{
			ObjectMeta: metav1.ObjectMeta{Namespace: testbed.OLMNamespace, Name: "in-cluster"},
			Spec:       operatorsv1alpha1.CatalogSourceSpec{SourceType: operatorsv1alpha1.SourceTypeGrpc, Image: "registry.example/index:v1"},
		}),
		run:  migrateSub(func(m *subscription.Migrate) { m.Config = viewer; m.Source = "in-cluster"; m.DryRun = false }),
		want: []string{"you lack", "list pods in namespace olm", "create pods/portforward in namespace olm"},
	}, {
		name: "user lacks RBAC for cso",
		run:  migrateCSO(func(m *cso.Migrate) { m.Config = viewer; m.DryRun = false }),
		want: []string{"you lack", "delete subscriptions.operators.coreos.com in namespace operators", "delete awsebsdrivers.csi.openshift.io in every namespace"},
	}, {
		name: "unknown output format",
		run:  migrateSub(func(m *subscription.Migrate) { m.Output = "xml" }),
		want: []string{`unknown output format "xml": use text, yaml or json`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			before := snapshot(ctx, t, c)
			var out bytes.Buffer
			err := tc.run(&out)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out.String())
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error lacks %q:\n%v", want, err)
				}
			}
			assertUnchanged(ctx, t, c, before)
		})
	}
}

// TestMigrateSubscriptionFailureSaysHowToRestore stops a migration after the switch, as a
// timeout does, and checks that the printed restore command puts the Subscription back.
func TestMigrateSubscriptionFailureSaysHowToRestore(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
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
	const restore = `kubectl patch subscriptions.operators.coreos.com -n operators aws-efs-operator --type=merge -p '`
	msg := err.Error()
	i := strings.Index(msg, restore)
	if !strings.Contains(msg, "step follow-upgrade: gave up waiting for the upgrade to "+certifiedHeadCSV) || i < 0 {
		t.Fatalf("the error does not say where it stopped and how to restore:\n%v", err)
	}
	patch, _, _ := strings.Cut(msg[i+len(restore):], "'")
	var sub operatorsv1alpha1.Subscription
	must(t, c.Get(ctx, client.ObjectKeyFromObject(&original), &sub))
	if sub.Spec.CatalogSource != certifiedSource {
		t.Fatalf("the failed run did not switch the source first: %+v", sub.Spec)
	}
	must(t, c.Patch(ctx, &sub, client.RawPatch(types.MergePatchType, []byte(patch))))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(&original), &sub))
	if sub.Spec.CatalogSource != original.Spec.CatalogSource || sub.Spec.CatalogSourceNamespace != original.Spec.CatalogSourceNamespace || sub.Spec.Channel != original.Spec.Channel {
		t.Errorf("the printed patch %s did not restore the spec: %+v, was %+v", patch, sub.Spec, original.Spec)
	}
}
