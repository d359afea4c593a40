package subscription

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// upgraded follows OLM until the planned CSV Succeeded. What OLM will not get past by itself
// ends the wait at once: a Failed InstallPlan or CSV, or a Subscription someone else changed or
// deleted. What may still clear (a Pending CSV, an InstallPlan OLM retries, an unreachable
// catalog, a failed resolution) leads the status, so that the error on timeout starts with the
// reason: the furthest OLM got comes first, since what holds up a later stage is the more
// precise cause (OLM also fails to resolve while a Pending CSV replaces the installed one).
func upgraded(ctx context.Context, c client.Client, plan *Plan) (bool, string, error) {
	var sub operatorsv1alpha1.Subscription
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Name}, &sub); {
	case apierrors.IsNotFound(err):
		return false, "", fmt.Errorf("Subscription %s/%s was deleted during the migration", plan.Namespace, plan.Name)
	case err != nil:
		return false, "cannot read the Subscription: " + err.Error(), nil
	}
	if endpointOf(&sub) != plan.To {
		return false, "", fmt.Errorf("Subscription %s/%s was changed by someone else during the migration: %s; csi-olm stops rather than undo it",
			plan.Namespace, plan.Name, describeChange(&sub, plan.To))
	}
	var blockers []string
	progress := []string{fmt.Sprintf("Subscription state=%s installedCSV=%s currentCSV=%s", sub.Status.State, sub.Status.InstalledCSV, sub.Status.CurrentCSV)}

	if sub.Status.CurrentCSV != "" {
		var csv operatorsv1alpha1.ClusterServiceVersion
		if err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: sub.Status.CurrentCSV}, &csv); err == nil {
			switch csv.Status.Phase {
			case operatorsv1alpha1.CSVPhaseFailed:
				return false, "", fmt.Errorf("CSV %s/%s failed: %s", csv.Namespace, csv.Name, csvWhy(&csv))
			case operatorsv1alpha1.CSVPhasePending:
				blockers = append(blockers, fmt.Sprintf("CSV %s is Pending: %s", csv.Name, csvWhy(&csv)))
			case operatorsv1alpha1.CSVPhaseSucceeded:
				if csv.Name == plan.Upgrade.Head && sub.Status.State == operatorsv1alpha1.SubscriptionStateAtLatest && sub.Status.InstalledCSV == plan.Upgrade.Head {
					return true, "", nil
				}
			}
			progress = append(progress, fmt.Sprintf("CSV %s %s", csv.Name, csv.Status.Phase))
		}
	}
	if ref := sub.Status.InstallPlanRef; ref != nil {
		var ip operatorsv1alpha1.InstallPlan
		if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &ip); err == nil {
			blocker, err := installPlanBlocker(&ip, plan.Upgrade.Head)
			if err != nil {
				return false, "", err
			}
			if blocker != "" {
				blockers = append(blockers, blocker)
			}
			progress = append(progress, fmt.Sprintf("InstallPlan %s %s", ip.Name, ip.Status.Phase))
		}
	}
	blockers = append(blockers, catalogBlockers(ctx, c, plan, &sub)...)
	return false, strings.Join(append(blockers, progress...), "; "), nil
}

// catalogBlockers says what OLM reports about resolving the upgrade from the target catalog:
// the catalog missing or its registry unreachable (read from the CatalogSource, since OLM marks
// a catalog served by address healthy whatever its connection), and the Subscription's
// conditions for an unhealthy catalog or a failed resolution.
func catalogBlockers(ctx context.Context, c client.Client, plan *Plan, sub *operatorsv1alpha1.Subscription) []string {
	var blockers []string
	ref := plan.To.SourceNamespace + "/" + plan.To.Source
	var cs operatorsv1alpha1.CatalogSource
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.To.SourceNamespace, Name: plan.To.Source}, &cs); {
	case apierrors.IsNotFound(err):
		blockers = append(blockers, fmt.Sprintf("CatalogSource %s was deleted: OLM cannot resolve the upgrade without it", ref))
	case err != nil:
		blockers = append(blockers, fmt.Sprintf("cannot read CatalogSource %s: %v", ref, err))
	case cs.Status.GRPCConnectionState != nil && cs.Status.GRPCConnectionState.LastObservedState != "READY":
		st := cs.Status.GRPCConnectionState
		blockers = append(blockers, fmt.Sprintf("the registry of catalog %s is unreachable: connection state %s (address %s) since %s; unless OLM still holds a copy of the catalog, it cannot resolve until the registry answers",
			ref, st.LastObservedState, st.Address, st.LastConnectTime.UTC().Format(time.RFC3339)))
	}
	for _, cond := range sub.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case operatorsv1alpha1.SubscriptionCatalogSourcesUnhealthy:
			blockers = append(blockers, fmt.Sprintf("OLM reports a catalog unhealthy (%s, %s): %s", cond.Type, cond.Reason, cond.Message))
		case operatorsv1alpha1.SubscriptionResolutionFailed:
			blockers = append(blockers, fmt.Sprintf("OLM cannot resolve the upgrade (%s, %s): %s", cond.Type, cond.Reason, cond.Message))
		}
	}
	return blockers
}

// installPlanBlocker reads the InstallPlan the Subscription points at. One that installs head
// and Failed is final: OLM does not retry a Failed InstallPlan.
func installPlanBlocker(ip *operatorsv1alpha1.InstallPlan, head string) (string, error) {
	ref := ip.Namespace + "/" + ip.Name
	ours := slices.Contains(ip.Spec.ClusterServiceVersionNames, head)
	switch ip.Status.Phase {
	case operatorsv1alpha1.InstallPlanPhaseFailed:
		if ours {
			return "", &installPlanFailed{fmt.Sprintf("InstallPlan %s, which installs %s, failed, and OLM does not retry a failed InstallPlan: %s", ref, head, installPlanWhy(ip))}
		}
	case operatorsv1alpha1.InstallPlanPhaseRequiresApproval:
		return fmt.Sprintf("InstallPlan %s awaits manual approval: kubectl patch installplan -n %s %s --type=merge -p '{\"spec\":{\"approved\":true}}'", ref, ip.Namespace, ip.Name), nil
	case operatorsv1alpha1.InstallPlanPhaseInstalling:
		if ip.Status.Message != "" {
			return fmt.Sprintf("InstallPlan %s is failing, and OLM retries it until its retry timeout: %s", ref, ip.Status.Message), nil
		}
	}
	return "", nil
}

// installPlanFailed is a Failed InstallPlan of the upgrade. OLM has by then made the new CSV and
// pointed the Subscription's status at it, so putting the source back alone would leave OLM stuck
// on them; a rerun of the verb clears them instead (retryFailedInstallPlan).
type installPlanFailed struct{ why string }

func (e *installPlanFailed) Error() string { return e.why }

// installPlanWhy is OLM's account of an InstallPlan's failure: its failed conditions, else its
// message.
func installPlanWhy(ip *operatorsv1alpha1.InstallPlan) string {
	var why []string
	for _, cond := range ip.Status.Conditions {
		if cond.Status == corev1.ConditionFalse && cond.Reason != "" {
			why = append(why, fmt.Sprintf("%s=False reason=%s: %s", cond.Type, cond.Reason, cond.Message))
		}
	}
	if len(why) == 0 {
		return ip.Status.Message
	}
	return strings.Join(why, "; ")
}

// csvWhy is OLM's reason and message for a CSV's phase and, where requirements are not met,
// which ones.
func csvWhy(csv *operatorsv1alpha1.ClusterServiceVersion) string {
	why := fmt.Sprintf("%s: %s", csv.Status.Reason, csv.Status.Message)
	var unmet []string
	for _, r := range csv.Status.RequirementStatus {
		if r.Status != operatorsv1alpha1.RequirementStatusReasonPresent {
			unmet = append(unmet, fmt.Sprintf("%s %s is %s (%s)", r.Kind, r.Name, r.Status, r.Message))
		}
		for _, d := range r.Dependents {
			if d.Status != operatorsv1alpha1.DependentStatusReasonSatisfied {
				unmet = append(unmet, fmt.Sprintf("%s of %s %s is %s (%s)", d.Kind, r.Kind, r.Name, d.Status, d.Message))
			}
		}
	}
	if len(unmet) > 0 {
		why += "; not met: " + strings.Join(unmet, ", ")
	}
	return why
}

func endpointOf(sub *operatorsv1alpha1.Subscription) Endpoint {
	return Endpoint{Source: sub.Spec.CatalogSource, SourceNamespace: sub.Spec.CatalogSourceNamespace, Channel: sub.Spec.Channel}
}

// describeChange says how the Subscription's source and channel differ from want and, from its
// managedFields, which field manager set each, so that the admin knows who else is at work.
func describeChange(sub *operatorsv1alpha1.Subscription, want Endpoint) string {
	got := endpointOf(sub)
	var diffs []string
	for _, f := range []struct{ field, got, want string }{
		{"source", got.Source, want.Source},
		{"sourceNamespace", got.SourceNamespace, want.SourceNamespace},
		{"channel", got.Channel, want.Channel},
	} {
		if f.got == f.want {
			continue
		}
		diff := fmt.Sprintf("spec.%s is %q, not %q", f.field, f.got, f.want)
		if manager := managerOf(sub, f.field); manager != "" {
			diff += " (set by " + manager + ")"
		}
		diffs = append(diffs, diff)
	}
	return strings.Join(diffs, ", ")
}

// managerOf returns the field manager that last set a field of the Subscription's spec.
func managerOf(sub *operatorsv1alpha1.Subscription, field string) string {
	var manager string
	var latest time.Time
	for _, entry := range sub.ManagedFields {
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if entry.FieldsV1 == nil || json.Unmarshal(entry.FieldsV1.Raw, &fields) != nil {
			continue
		}
		if _, ok := fields.Spec["f:"+field]; !ok {
			continue
		}
		var at time.Time
		if entry.Time != nil {
			at = entry.Time.Time
		}
		if manager == "" || !at.Before(latest) {
			manager, latest = entry.Manager, at
		}
	}
	return manager
}
