package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

const (
	efsPackage       = "aws-efs-operator"
	communitySource  = "community-operators"
	certifiedSource  = "csi-olm-certified" // as README.md's quick start names it
	communityHeadCSV = "aws-efs-operator.v0.0.8"
	certifiedHeadCSV = "aws-efs-csi-driver-operator.v4.11.0"
	// olmEraSource serves the certified catalog of OpenShift 4.5, the only minor whose index
	// holds the OLM-installed EBS and Manila operators that CSO adopts.
	olmEraSource = "certified-operators-v4.5"
)

// olmFixture is an OLM stack serving the project's offline catalogs of the flows' cluster minor,
// catalog/community/v4.N and catalog/certified/v4.N, as CatalogSources community-operators and
// certified-operators, and catalog/certified/v4.5 as certified-operators-v4.5.
type olmFixture struct {
	stack *testbed.Stack
}

func startOLMFixture(ctx context.Context, t testing.TB) *olmFixture {
	t.Helper()
	s := testutil.StartTestBed(t, testbed.OLM)
	// The supported CSV lists ClusterCSIDriver as a native API: OLM checks the cluster serves it.
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Version: clusterRelease(clusterMinor)}); err != nil {
		t.Fatal(err)
	}
	catalogs := filepath.Join("..", "..", "catalog")
	for name, dir := range map[string]string{
		communitySource: tree.Path(filepath.Join(catalogs, "community"), clusterMinor),
		certifiedSource: tree.Path(filepath.Join(catalogs, "certified"), clusterMinor),
		olmEraSource:    filepath.Join(catalogs, "certified", "v4.5"),
	} {
		addr, err := s.ServeCatalog(ctx, name, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateCatalogSource(ctx, testbed.OLMNamespace, name, addr); err != nil {
			t.Fatal(err)
		}
	}
	return &olmFixture{stack: s}
}

// subscribe creates a Subscription, as an admin does from OperatorHub.
func (f *olmFixture) subscribe(ctx context.Context, pkg, channel, source string) error {
	return f.stack.Client.Create(ctx, &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: pkg, Namespace: testbed.OperatorsNamespace},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			Package: pkg, Channel: channel,
			CatalogSource: source, CatalogSourceNamespace: testbed.OLMNamespace,
			InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
		},
	})
}

// installCommunity subscribes to the community aws-efs-operator, as its users did, and waits
// until OLM installed its head, v0.0.8.
func (f *olmFixture) installCommunity(ctx context.Context, t testing.TB) {
	t.Helper()
	c, ns := f.stack.Client, testbed.OperatorsNamespace
	if err := f.subscribe(ctx, efsPackage, "stable", communitySource); err != nil {
		t.Fatal(err)
	}
	if _, err := testbed.WaitForSubscription(ctx, c, ns, efsPackage, "AtLatestKnown "+communityHeadCSV, olm.AtLatestKnown(communityHeadCSV)); err != nil {
		t.Fatal(err)
	}
	if err := testbed.WaitForCSV(ctx, c, ns, communityHeadCSV, operatorsv1alpha1.CSVPhaseSucceeded); err != nil {
		t.Fatal(err)
	}
}

// switchSource edits only spec.source, as docs/architecture.md#upgrades documents for admins.
func (f *olmFixture) switchSource(ctx context.Context) error {
	var sub operatorsv1alpha1.Subscription
	key := client.ObjectKey{Namespace: testbed.OperatorsNamespace, Name: efsPackage}
	if err := f.stack.Client.Get(ctx, key, &sub); err != nil {
		return err
	}
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.CatalogSource = certifiedSource
	return f.stack.Client.Patch(ctx, &sub, patch)
}

func TestInstallAndSourceSwitch(t *testing.T) {
	t.Parallel()
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	f := startOLMFixture(ctx, t)
	c := f.stack.Client
	ns := testbed.OperatorsNamespace

	f.installCommunity(ctx, t)
	if err := testbed.WaitForDeploymentAvailable(ctx, c, ns, "aws-efs-operator"); err != nil {
		t.Fatal(err)
	}

	if err := f.switchSource(ctx); err != nil {
		t.Fatal(err)
	}
	sub, err := testbed.WaitForSubscription(ctx, c, ns, efsPackage, "AtLatestKnown "+certifiedHeadCSV, olm.AtLatestKnown(certifiedHeadCSV))
	if err != nil {
		t.Fatal(err)
	}
	if sub.Spec.Channel != "stable" || sub.Spec.Package != efsPackage {
		t.Errorf("the switch changed more than the source: %+v", sub.Spec)
	}
	if err := testbed.WaitForCSV(ctx, c, ns, certifiedHeadCSV, operatorsv1alpha1.CSVPhaseSucceeded); err != nil {
		t.Fatal(err)
	}
	if err := testbed.WaitForDeploymentAvailable(ctx, c, ns, "aws-efs-csi-driver-operator"); err != nil {
		t.Fatal(err)
	}
	// OLM removes the replaced CSV once its successor succeeded.
	err = waitFor(ctx, func() bool {
		var old operatorsv1alpha1.ClusterServiceVersion
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: communityHeadCSV}, &old))
	})
	if err != nil {
		t.Errorf("the community CSV was not replaced: %v", err)
	}
}

func waitFor(ctx context.Context, cond func() bool) error {
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) { return cond(), nil })
}

// TestCertifiedCatalogInstallsEveryOperator installs each operator of the offline certified
// catalogs, from the newest minor whose index holds it, through a Subscription on its default
// channel, as OperatorHub does.
func TestCertifiedCatalogInstallsEveryOperator(t *testing.T) {
	t.Parallel()
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	f := startOLMFixture(ctx, t)
	c, ns := f.stack.Client, testbed.OperatorsNamespace
	operators := []struct{ pkg, channel, csv, deployment, source string }{
		{efsPackage, "stable", certifiedHeadCSV, "aws-efs-csi-driver-operator", certifiedSource},
		{"aws-ebs-csi-driver-operator", "preview", "aws-ebs-csi-driver-operator.v4.5.0", "aws-ebs-csi-driver-operator", olmEraSource},
		{"manila-csi-driver-operator", "stable", "manila-csi-driver-operator.v4.5.0", "csi-driver-manila-operator", olmEraSource},
	}
	for _, op := range operators {
		if err := f.subscribe(ctx, op.pkg, op.channel, op.source); err != nil {
			t.Fatal(err)
		}
	}
	for _, op := range operators {
		if _, err := testbed.WaitForSubscription(ctx, c, ns, op.pkg, "AtLatestKnown "+op.csv, olm.AtLatestKnown(op.csv)); err != nil {
			t.Fatal(err)
		}
		if err := testbed.WaitForCSV(ctx, c, ns, op.csv, operatorsv1alpha1.CSVPhaseSucceeded); err != nil {
			t.Fatal(err)
		}
		if err := testbed.WaitForDeploymentAvailable(ctx, c, ns, op.deployment); err != nil {
			t.Fatal(err)
		}
	}
}
