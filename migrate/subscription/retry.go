package subscription

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StuckSwitch is a switch made without this verb whose InstallPlan OLM failed.
type StuckSwitch struct {
	InstallPlan string `json:"installPlan"`
	Why         string `json:"why"`
}

// failedInstallPlan is the InstallPlan the Subscription points at when OLM failed it, else nil.
func failedInstallPlan(ctx context.Context, c client.Client, sub *operatorsv1alpha1.Subscription) (*operatorsv1alpha1.InstallPlan, error) {
	ref := sub.Status.InstallPlanRef
	if ref == nil {
		return nil, nil
	}
	var ip operatorsv1alpha1.InstallPlan
	switch err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &ip); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading InstallPlan %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if ip.Status.Phase != operatorsv1alpha1.InstallPlanPhaseFailed {
		return nil, nil
	}
	return &ip, nil
}

// stuckSwitch recognises a Subscription already on the target whose InstallPlan failed, as a
// switch by hand leaves it when OLM refuses the new CRD, and returns the CSV that InstallPlan was
// to replace: the one OLM moved to Replacing and that still runs. A failed InstallPlan on a
// Subscription that is not on the target is refused: the verb would switch it onward from a
// state it cannot plan from.
func stuckSwitch(ctx context.Context, c client.Client, sub *operatorsv1alpha1.Subscription, to Endpoint) (*StuckSwitch, string, error) {
	ip, err := failedInstallPlan(ctx, c, sub)
	if ip == nil || err != nil {
		return nil, "", err
	}
	why := installPlanWhy(ip)
	onTarget := sub.Spec.CatalogSource == to.Source && sub.Spec.CatalogSourceNamespace == to.SourceNamespace && (to.Channel == "" || to.Channel == sub.Spec.Channel)
	if !onTarget {
		return nil, "", fmt.Errorf("Subscription %s/%s is stuck on InstallPlan %s, which OLM failed: %s. Run this verb with the catalog the Subscription now names (--source %s --source-namespace %s) to clear it once the cause is fixed; nothing was changed",
			sub.Namespace, sub.Name, ip.Name, why, sub.Spec.CatalogSource, sub.Spec.CatalogSourceNamespace)
	}
	var csvs operatorsv1alpha1.ClusterServiceVersionList
	if err := c.List(ctx, &csvs, client.InNamespace(sub.Namespace)); err != nil {
		return nil, "", fmt.Errorf("listing the CSVs of namespace %s: %w", sub.Namespace, err)
	}
	var replaced []string
	for _, csv := range csvs.Items {
		if csv.Status.Phase == operatorsv1alpha1.CSVPhaseReplacing && !slices.Contains(ip.Spec.ClusterServiceVersionNames, csv.Name) {
			replaced = append(replaced, csv.Name)
		}
	}
	if len(replaced) != 1 {
		return nil, "", fmt.Errorf("Subscription %s/%s is stuck on InstallPlan %s, which OLM failed (%s), but %d CSVs of namespace %s are being replaced (%s), not one to resume from; nothing was changed",
			sub.Namespace, sub.Name, ip.Name, why, len(replaced), sub.Namespace, strings.Join(replaced, ", "))
	}
	return &StuckSwitch{InstallPlan: ip.Name, Why: why}, replaced[0], nil
}

// retryFailedInstallPlan lets OLM v0 try the upgrade again after an InstallPlan of it failed, as
// a rerun of the verb does once the cause is fixed. OLM never retries a Failed InstallPlan, and it
// leaves behind what keeps it from resolving again: the Subscription's status names the new CSV,
// which waits Pending for the objects the InstallPlan never made, as installed. Nothing that runs
// is touched: the installed CSV, its operator and the driver stay.
//
// The order keeps OLM from ever resolving from a half-cleared state. While the Pending CSV stands,
// OLM resolves on every change and takes it for the upgrade already made; once it is gone and the
// status still names it, OLM installs it afresh, replacing nothing, beside the CSV that runs; and
// a Subscription whose InstallPlan disappears while it is UpgradePending loses its current CSV, so
// OLM installs the channel's head afresh too. So this
//  1. holds OLM: a status that names an InstallPlan and is UpgradePending is one OLM does not
//     resolve, and with no current CSV named OLM does not put it back to AtLatest;
//  2. deletes the CSVs that InstallPlan created and that never succeeded;
//  3. points the status at the CSV the upgrade starts from, which lets OLM resolve the upgrade
//     from it and make a new InstallPlan;
//  4. deletes the failed InstallPlan only once the Subscription names the new one.
func retryFailedInstallPlan(ctx context.Context, c client.Client, plan *Plan, progress io.Writer) error {
	var sub operatorsv1alpha1.Subscription
	if err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Name}, &sub); err != nil {
		return fmt.Errorf("reading Subscription %s/%s: %w", plan.Namespace, plan.Name, err)
	}
	ip, err := failedInstallPlan(ctx, c, &sub)
	if ip == nil || err != nil || !slices.Contains(ip.Spec.ClusterServiceVersionNames, plan.Upgrade.Head) {
		return err
	}
	fmt.Fprintf(progress, "InstallPlan %s/%s, which installs %s, failed before (%s): csi-olm clears it so that OLM tries the upgrade again\n",
		ip.Namespace, ip.Name, plan.Upgrade.Head, installPlanWhy(ip))
	from := plan.InstalledCSV
	var pending []*operatorsv1alpha1.ClusterServiceVersion
	for _, name := range ip.Spec.ClusterServiceVersionNames {
		if name == plan.InstalledCSV {
			continue
		}
		var csv operatorsv1alpha1.ClusterServiceVersion
		switch err := c.Get(ctx, client.ObjectKey{Namespace: ip.Namespace, Name: name}, &csv); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("reading CSV %s/%s: %w", ip.Namespace, name, err)
		}
		if csv.Status.Phase == operatorsv1alpha1.CSVPhaseSucceeded {
			// It runs: leave it, and let the status keep what OLM says is installed.
			from = ""
			continue
		}
		pending = append(pending, &csv)
	}
	if from != "" {
		fmt.Fprintf(progress, "  holding OLM's resolution of Subscription %s/%s while the failed upgrade is cleared\n", sub.Namespace, sub.Name)
		if err := setStatus(ctx, c, plan, ip.Name, func(st *operatorsv1alpha1.SubscriptionStatus) {
			st.CurrentCSV, st.State = "", operatorsv1alpha1.SubscriptionStateUpgradePending
		}); err != nil {
			return err
		}
	}
	for _, csv := range pending {
		fmt.Fprintf(progress, "  deleting CSV %s (%s), which that InstallPlan created and which never succeeded\n", csv.Name, csv.Status.Phase)
		if err := deleteAndWait(ctx, c, csv); err != nil {
			return fmt.Errorf("deleting CSV %s/%s: %w", csv.Namespace, csv.Name, err)
		}
	}
	if from != "" {
		fmt.Fprintf(progress, "  pointing the status of Subscription %s/%s back at the installed CSV %s, and waiting for OLM's new InstallPlan\n", sub.Namespace, sub.Name, from)
		if err := resolveAnew(ctx, c, plan, ip.Name, from); err != nil {
			return err
		}
	}
	fmt.Fprintf(progress, "  deleting InstallPlan %s\n", ip.Name)
	if err := deleteAndWait(ctx, c, ip); err != nil {
		return fmt.Errorf("deleting InstallPlan %s/%s: %w", ip.Namespace, ip.Name, err)
	}
	return nil
}

// resolveAnewTimeout bounds the wait for OLM's new InstallPlan: OLM resolves within seconds of a
// status change.
const resolveAnewTimeout = 2 * time.Minute

// resolveAnew points the Subscription's status at the CSV the upgrade starts from and waits until
// OLM names a new InstallPlan in it. A resolution OLM began before the status changed writes back
// the status it began from, so the status is pointed back again for as long as it names the
// failed InstallPlan without the starting CSV.
func resolveAnew(ctx context.Context, c client.Client, plan *Plan, failed, from string) error {
	fromHere := func(st *operatorsv1alpha1.SubscriptionStatus) {
		st.InstalledCSV, st.CurrentCSV, st.State = from, from, operatorsv1alpha1.SubscriptionStateAtLatest
	}
	if err := setStatus(ctx, c, plan, failed, fromHere); errors.Is(err, errMovedOn) {
		return nil
	} else if err != nil {
		return err
	}
	var last operatorsv1alpha1.Subscription
	err := wait.PollUntilContextTimeout(ctx, time.Second/2, resolveAnewTimeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Name}, &last); err != nil {
			return false, err
		}
		if ref := last.Status.InstallPlanRef; ref == nil || ref.Name != failed {
			return true, nil
		}
		if last.Status.CurrentCSV != from || last.Status.State != operatorsv1alpha1.SubscriptionStateAtLatest {
			if err := setStatus(ctx, c, plan, failed, fromHere); errors.Is(err, errMovedOn) {
				return true, nil
			} else if err != nil {
				return false, err
			}
		}
		return false, nil
	})
	if err != nil {
		why := "no ResolutionFailed condition"
		if cond := last.Status.GetCondition(operatorsv1alpha1.SubscriptionResolutionFailed); cond.Status == "True" {
			why = fmt.Sprintf("ResolutionFailed: %s", cond.Message)
		}
		return fmt.Errorf("waiting for OLM to resolve the upgrade of Subscription %s/%s from %s anew (%s): %w", plan.Namespace, plan.Name, from, why, err)
	}
	return nil
}

// errMovedOn is OLM naming another InstallPlan in the Subscription than the failed one.
var errMovedOn = errors.New("OLM moved the Subscription to another InstallPlan")

// setStatus changes the Subscription's status while it still names the failed InstallPlan.
func setStatus(ctx context.Context, c client.Client, plan *Plan, failed string, change func(*operatorsv1alpha1.SubscriptionStatus)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var sub operatorsv1alpha1.Subscription
		if err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Name}, &sub); err != nil {
			return err
		}
		if sub.Status.InstallPlanRef == nil || sub.Status.InstallPlanRef.Name != failed {
			return fmt.Errorf("%w: Subscription %s/%s names %v, not InstallPlan %s; csi-olm stops rather than guess: run it again", errMovedOn, sub.Namespace, sub.Name, sub.Status.InstallPlanRef, failed)
		}
		out := sub.DeepCopy()
		change(&out.Status)
		out.Status.LastUpdated = metav1.Now()
		return c.Status().Update(ctx, out, client.FieldOwner(fieldManager))
	})
	if err != nil {
		return fmt.Errorf("updating the status of Subscription %s/%s: %w", plan.Namespace, plan.Name, err)
	}
	return nil
}

// deleteAndWait deletes obj and waits until it is gone, so that OLM, which reacts to what is
// there, never sees it again.
func deleteAndWait(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, time.Second/2, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
