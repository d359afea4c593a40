package subscription

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const head = "aws-efs-csi-driver-operator.v4.11.0"

func testPlan() *Plan {
	from := Endpoint{Source: "community-operators", SourceNamespace: "olm", Channel: "stable"}
	return &Plan{
		Namespace: "operators", Name: "aws-efs-operator",
		From: from, To: Endpoint{Source: "certified-operators", SourceNamespace: "olm", Channel: "stable"},
		Upgrade: &Upgrade{Channel: "stable", Head: head},
		OriginalSpec: operatorsv1alpha1.SubscriptionSpec{
			Package: "aws-efs-operator", CatalogSource: from.Source, CatalogSourceNamespace: from.SourceNamespace, Channel: from.Channel,
		},
	}
}

func TestStepNamesAreTheStepsInOrder(t *testing.T) {
	var names []string
	for _, s := range (&Migrate{}).steps(nil, testPlan()) {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, stepNames) {
		t.Errorf("the steps run as %v, but the journal is checked against %v", names, stepNames)
	}
}

// TestUpgradedSaysWhatHoldsTheUpgrade feeds upgraded what OLM writes in each fault, and checks
// what ends the wait at once and what leads the status a timeout reports.
func TestUpgradedSaysWhatHoldsTheUpgrade(t *testing.T) {
	plan := testPlan()
	sub := func(edit func(*operatorsv1alpha1.Subscription)) *operatorsv1alpha1.Subscription {
		s := &operatorsv1alpha1.Subscription{
			ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: "aws-efs-operator"},
			Spec:       &operatorsv1alpha1.SubscriptionSpec{Package: "aws-efs-operator", CatalogSource: "certified-operators", CatalogSourceNamespace: "olm", Channel: "stable"},
			Status: operatorsv1alpha1.SubscriptionStatus{
				State: operatorsv1alpha1.SubscriptionStateUpgradePending, CurrentCSV: head, InstalledCSV: "aws-efs-operator.v0.0.8",
				InstallPlanRef: &corev1.ObjectReference{Namespace: "operators", Name: "install-abcde"},
			},
		}
		edit(s)
		return s
	}
	catalog := func(state string) *operatorsv1alpha1.CatalogSource {
		return &operatorsv1alpha1.CatalogSource{
			ObjectMeta: metav1.ObjectMeta{Namespace: "olm", Name: "certified-operators"},
			Status: operatorsv1alpha1.CatalogSourceStatus{GRPCConnectionState: &operatorsv1alpha1.GRPCConnectionState{
				Address: "10.0.0.1:50051", LastObservedState: state, LastConnectTime: metav1.NewTime(time.Date(2026, 11, 23, 4, 3, 38, 0, time.UTC)),
			}},
		}
	}
	installPlan := func(phase operatorsv1alpha1.InstallPlanPhase, message string, conditions ...operatorsv1alpha1.InstallPlanCondition) *operatorsv1alpha1.InstallPlan {
		return &operatorsv1alpha1.InstallPlan{
			ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: "install-abcde"},
			Spec:       operatorsv1alpha1.InstallPlanSpec{ClusterServiceVersionNames: []string{head}},
			Status:     operatorsv1alpha1.InstallPlanStatus{Phase: phase, Message: message, Conditions: conditions},
		}
	}
	csv := func(phase operatorsv1alpha1.ClusterServiceVersionPhase, reason operatorsv1alpha1.ConditionReason, message string, requirements ...operatorsv1alpha1.RequirementStatus) *operatorsv1alpha1.ClusterServiceVersion {
		return &operatorsv1alpha1.ClusterServiceVersion{
			ObjectMeta: metav1.ObjectMeta{Namespace: "operators", Name: head},
			Status:     operatorsv1alpha1.ClusterServiceVersionStatus{Phase: phase, Reason: reason, Message: message, RequirementStatus: requirements},
		}
	}
	resolutionFailed := operatorsv1alpha1.SubscriptionCondition{Type: operatorsv1alpha1.SubscriptionResolutionFailed, Status: corev1.ConditionTrue,
		Reason: "ErrorPreventedResolution", Message: "failed to list bundles"}
	cases := []struct {
		name    string
		objects []client.Object
		done    bool
		// wantErr ends the wait at once; wantStatus must lead the status otherwise.
		wantErr, wantStatus string
	}{{
		name: "installed",
		objects: []client.Object{sub(func(s *operatorsv1alpha1.Subscription) {
			s.Status.State, s.Status.InstalledCSV = operatorsv1alpha1.SubscriptionStateAtLatest, head
		}), catalog("READY"), csv(operatorsv1alpha1.CSVPhaseSucceeded, "", "")},
		done: true,
	}, {
		name:    "the Subscription edited by someone else",
		objects: []client.Object{sub(func(s *operatorsv1alpha1.Subscription) { s.Spec.Channel = "beta" }), catalog("READY")},
		wantErr: `Subscription operators/aws-efs-operator was changed by someone else during the migration: spec.channel is "beta", not "stable"`,
	}, {
		name:    "the Subscription deleted",
		objects: []client.Object{catalog("READY")},
		wantErr: "Subscription operators/aws-efs-operator was deleted during the migration",
	}, {
		name: "InstallPlan failed",
		objects: []client.Object{sub(func(*operatorsv1alpha1.Subscription) {}), catalog("READY"), installPlan(operatorsv1alpha1.InstallPlanPhaseFailed, "risk of data loss",
			operatorsv1alpha1.InstallPlanCondition{Type: operatorsv1alpha1.InstallPlanInstalled, Status: corev1.ConditionFalse, Reason: operatorsv1alpha1.InstallPlanReasonComponentFailed, Message: "risk of data loss"})},
		wantErr: "InstallPlan operators/install-abcde, which installs " + head + ", failed, and OLM does not retry a failed InstallPlan: Installed=False reason=InstallComponentFailed: risk of data loss",
	}, {
		name:       "InstallPlan retried",
		objects:    []client.Object{sub(func(*operatorsv1alpha1.Subscription) {}), catalog("READY"), installPlan(operatorsv1alpha1.InstallPlanPhaseInstalling, "retrying execution due to error: risk of data loss")},
		wantStatus: "InstallPlan operators/install-abcde is failing, and OLM retries it until its retry timeout: retrying execution due to error: risk of data loss",
	}, {
		name:       "InstallPlan awaiting approval",
		objects:    []client.Object{sub(func(*operatorsv1alpha1.Subscription) {}), catalog("READY"), installPlan(operatorsv1alpha1.InstallPlanPhaseRequiresApproval, "")},
		wantStatus: `InstallPlan operators/install-abcde awaits manual approval: kubectl patch installplan -n operators install-abcde --type=merge -p '{"spec":{"approved":true}}'`,
	}, {
		name: "CSV Pending leads a failed resolution",
		objects: []client.Object{sub(func(s *operatorsv1alpha1.Subscription) {
			s.Status.Conditions = append(s.Status.Conditions, resolutionFailed)
		}), catalog("READY"),
			csv(operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVReasonRequirementsNotMet, "one or more requirements couldn't be found",
				operatorsv1alpha1.RequirementStatus{Kind: "NeverServed", Name: "v1.faults.csi-olm.io", Status: operatorsv1alpha1.RequirementStatusReasonNotPresent, Message: "Native API does not exist"},
				operatorsv1alpha1.RequirementStatus{Kind: "CustomResourceDefinition", Name: "sharedvolumes.aws-efs.managed.openshift.io", Status: operatorsv1alpha1.RequirementStatusReasonPresent})},
		wantStatus: "CSV " + head + " is Pending: RequirementsNotMet: one or more requirements couldn't be found; not met: NeverServed v1.faults.csi-olm.io is NotPresent (Native API does not exist); OLM cannot resolve",
	}, {
		name:    "CSV Failed",
		objects: []client.Object{sub(func(*operatorsv1alpha1.Subscription) {}), catalog("READY"), csv(operatorsv1alpha1.CSVPhaseFailed, "InstallComponentFailed", "install strategy failed")},
		wantErr: "CSV operators/" + head + " failed: InstallComponentFailed: install strategy failed",
	}, {
		name: "registry unreachable",
		objects: []client.Object{sub(func(s *operatorsv1alpha1.Subscription) {
			s.Status.Conditions = append(s.Status.Conditions, resolutionFailed)
		}), catalog("TRANSIENT_FAILURE")},
		wantStatus: "the registry of catalog olm/certified-operators is unreachable: connection state TRANSIENT_FAILURE (address 10.0.0.1:50051) since 2026-11-23T04:03:38Z; unless OLM still holds a copy of the catalog, it cannot resolve until the registry answers; OLM cannot resolve the upgrade (ResolutionFailed, ErrorPreventedResolution): failed to list bundles",
	}, {
		name:       "catalog deleted",
		objects:    []client.Object{sub(func(*operatorsv1alpha1.Subscription) {})},
		wantStatus: "CatalogSource olm/certified-operators was deleted: OLM cannot resolve the upgrade without it",
	}, {
		name: "catalog reported unhealthy",
		objects: []client.Object{sub(func(s *operatorsv1alpha1.Subscription) {
			s.Status.Conditions = append(s.Status.Conditions, operatorsv1alpha1.SubscriptionCondition{Type: operatorsv1alpha1.SubscriptionCatalogSourcesUnhealthy,
				Status: corev1.ConditionTrue, Reason: "UnhealthyCatalogSourceFound", Message: "targeted catalogsource olm/certified-operators unhealthy"})
		}), catalog("READY")},
		wantStatus: "OLM reports a catalog unhealthy (CatalogSourcesUnhealthy, UnhealthyCatalogSourceFound): targeted catalogsource olm/certified-operators unhealthy",
	}}
	scheme := runtime.NewScheme()
	if err := operatorsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build()
			done, status, err := upgraded(context.Background(), c, plan)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
			case err != nil || done != tc.done:
				t.Errorf("upgraded = %v, %q, %v; want done=%v", done, status, err, tc.done)
			case !strings.HasPrefix(status, tc.wantStatus):
				t.Errorf("the status does not start with %q:\n%s", tc.wantStatus, status)
			}
		})
	}
}

// TestDescribeChangeNamesWhoChangedIt checks the field manager named is the last to set the
// field that differs, read from managedFields.
func TestDescribeChangeNamesWhoChangedIt(t *testing.T) {
	entry := func(manager string, at time.Time, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Time: &metav1.Time{Time: at}}
	}
	now := time.Now()
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
			entry("olm", now, `{"f:status":{"f:state":{}}}`),
			entry("e2e.test", now.Add(-time.Hour), `{"f:spec":{"f:channel":{},"f:source":{},"f:sourceNamespace":{}}}`),
			entry("kubectl-edit", now.Add(-time.Minute), `{"f:spec":{"f:channel":{}}}`),
		}},
		Spec: &operatorsv1alpha1.SubscriptionSpec{CatalogSource: "community-operators", CatalogSourceNamespace: "olm", Channel: "beta"},
	}
	got := describeChange(sub, Endpoint{Source: "certified-operators", SourceNamespace: "olm", Channel: "stable"})
	want := `spec.source is "community-operators", not "certified-operators" (set by e2e.test), spec.channel is "beta", not "stable" (set by kubectl-edit)`
	if got != want {
		t.Errorf("describeChange = %s\nwant            %s", got, want)
	}
}

func TestPlanProblems(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Plan)
		want []string
	}{
		{"as planned", func(*Plan) {}, nil},
		{"a Subscription without a channel", func(p *Plan) { p.From.Channel, p.OriginalSpec.Channel = "", "" }, nil},
		{"another namespace", func(p *Plan) { p.Namespace = "second" }, []string{"it records Subscription second/aws-efs-operator, but a journal lives next to its Subscription, in namespace operators"}},
		{"no target", func(p *Plan) { p.To = Endpoint{} }, []string{"its to lacks a source, sourceNamespace or channel"}},
		{"no upgrade", func(p *Plan) { p.Upgrade = nil }, []string{"it records no CSV to upgrade to (upgrade.head)"}},
		{"another original spec", func(p *Plan) { p.OriginalSpec.CatalogSource = "redhat-operators" }, []string{"its originalSpec (package aws-efs-operator, catalog olm/redhat-operators, channel stable)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testPlan()
			tc.edit(p)
			got := p.Problems("operators", "aws-efs-operator")
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %q", got, tc.want)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(got[i], want) {
					t.Errorf("problem %q does not start with %q", got[i], want)
				}
			}
		})
	}
}
