package subscription

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// which waits Pending for the objects the InstallPlan never made, as installed. So, when the
// Subscription points at a Failed InstallPlan that installs the planned head, this points the
// Subscription's status back at the CSV the upgrade starts from, deletes the CSVs that InstallPlan
// created and that never succeeded, then deletes the InstallPlan; OLM then resolves the upgrade
// anew. Nothing that runs is touched: the installed CSV, its operator and the driver stay.
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
	// The status first, while it still names the failed InstallPlan: OLM resolves again as soon
	// as a CSV of the namespace goes, and resolving from a status that still names the deleted
	// CSV as installed, it installs that CSV afresh, replacing nothing, beside the one that runs
	// (then both provide the same APIs and OLM resolves nothing more). An InstallPlan the status
	// names keeps OLM from making another until it is gone.
	if from != "" {
		fmt.Fprintf(progress, "  pointing the status of Subscription %s/%s back at the installed CSV %s\n", sub.Namespace, sub.Name, from)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var sub operatorsv1alpha1.Subscription
			if err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Name}, &sub); err != nil {
				return err
			}
			if sub.Status.InstallPlanRef == nil || sub.Status.InstallPlanRef.Name != ip.Name {
				return fmt.Errorf("OLM moved Subscription %s/%s from InstallPlan %s to %v meanwhile: csi-olm stops rather than guess; run it again", sub.Namespace, sub.Name, ip.Name, sub.Status.InstallPlanRef)
			}
			out := sub.DeepCopy()
			out.Status.InstalledCSV, out.Status.CurrentCSV = from, from
			out.Status.State = operatorsv1alpha1.SubscriptionStateAtLatest
			return c.Status().Update(ctx, out, client.FieldOwner(fieldManager))
		})
		if err != nil {
			return fmt.Errorf("updating the status of Subscription %s/%s: %w", plan.Namespace, plan.Name, err)
		}
	}
	for _, csv := range pending {
		fmt.Fprintf(progress, "  deleting CSV %s (%s), which that InstallPlan created and which never succeeded\n", csv.Name, csv.Status.Phase)
		if err := deleteAndWait(ctx, c, csv); err != nil {
			return fmt.Errorf("deleting CSV %s/%s: %w", csv.Namespace, csv.Name, err)
		}
	}
	// Last, as OLM makes a new InstallPlan for a Subscription whose InstallPlan is gone: by now
	// the status names the installed CSV, so OLM resolves the upgrade from it.
	fmt.Fprintf(progress, "  deleting InstallPlan %s\n", ip.Name)
	if err := deleteAndWait(ctx, c, ip); err != nil {
		return fmt.Errorf("deleting InstallPlan %s/%s: %w", ip.Namespace, ip.Name, err)
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
