package subscription

import (
	"context"
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/migrate/internal/migration"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// The steps' names, as the journal records them.
const (
	switchSourceStep  = "switch-source"
	followUpgradeStep = "follow-upgrade"
	verifyDriverStep  = "verify-driver"
)

var stepNames = []string{switchSourceStep, followUpgradeStep, verifyDriverStep}

func (m *Migrate) steps(c client.Client, plan *Plan) []migration.Step {
	ref := plan.Namespace + "/" + plan.Name
	return []migration.Step{{
		Name: switchSourceStep,
		Description: fmt.Sprintf("switch Subscription %s to catalog %s/%s, channel %s",
			ref, plan.To.SourceNamespace, plan.To.Source, plan.To.Channel),
		Do: func(ctx context.Context) error { return switchSource(ctx, c, plan) },
	}, {
		Name:        followUpgradeStep,
		Description: fmt.Sprintf("wait for OLM to install %s and the Subscription to reach AtLatestKnown", plan.Upgrade.Head),
		Do: func(ctx context.Context) error {
			if err := retryFailedInstallPlan(ctx, c, plan, m.Progress); err != nil {
				return err
			}
			return migration.Wait(ctx, m.Progress, "the upgrade to "+plan.Upgrade.Head, m.Timeout, func(ctx context.Context) (bool, string, error) {
				return upgraded(ctx, c, plan)
			})
		},
	}, {
		Name:        verifyDriverStep,
		Description: "check that the EFS driver kept running and every Ready SharedVolume is still Ready",
		Do: func(ctx context.Context) error {
			return migration.Wait(ctx, m.Progress, "the driver and the SharedVolumes", m.Timeout, func(ctx context.Context) (bool, string, error) {
				return driverServes(ctx, c, plan)
			})
		},
	}}
}

// switchSource changes only the source and channel of the Subscription. It refuses when someone
// else changed them since the plan was made: the plan would no longer hold. OLM writes the
// Subscription's status all the time, so a write that lost that race reads it again and retries.
func switchSource(ctx context.Context, c client.Client, plan *Plan) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var sub operatorsv1alpha1.Subscription
		if err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Name}, &sub); err != nil {
			return fmt.Errorf("reading Subscription %s/%s: %w", plan.Namespace, plan.Name, err)
		}
		switch endpointOf(&sub) {
		case plan.To:
			return nil
		case plan.From:
		default:
			return fmt.Errorf("Subscription %s/%s changed since the migration was planned: %s: %w",
				plan.Namespace, plan.Name, describeChange(&sub, plan.From), migration.ErrNothingChanged)
		}
		updated := sub.DeepCopy()
		updated.Spec.CatalogSource = plan.To.Source
		updated.Spec.CatalogSourceNamespace = plan.To.SourceNamespace
		updated.Spec.Channel = plan.To.Channel
		if err := c.Update(ctx, updated, client.FieldOwner(fieldManager)); err != nil {
			return fmt.Errorf("switching Subscription %s/%s: %w", plan.Namespace, plan.Name, err)
		}
		return nil
	})
}

// driverServes checks the driver DaemonSet is the one that ran before, and available, and that
// every SharedVolume Ready before is Ready.
func driverServes(ctx context.Context, c client.Client, plan *Plan) (bool, string, error) {
	var problems []string
	if plan.DriverDaemonSetUID != "" {
		var ds appsv1.DaemonSet
		err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: efs.NodeDaemonSet}, &ds)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && ds.UID != plan.DriverDaemonSetUID):
			return false, "", fmt.Errorf("the EFS driver DaemonSet %s/%s was deleted during the migration: volumes cannot be mounted on new pods until a driver runs again", plan.Namespace, efs.NodeDaemonSet)
		case err != nil:
			problems = append(problems, "cannot read the driver DaemonSet: "+err.Error())
		case ds.Status.NumberAvailable < ds.Status.DesiredNumberScheduled:
			problems = append(problems, fmt.Sprintf("DaemonSet %s has %d of %d pods available", efs.NodeDaemonSet, ds.Status.NumberAvailable, ds.Status.DesiredNumberScheduled))
		}
	}
	for _, ref := range plan.ReadySharedVolumes {
		namespace, name, _ := strings.Cut(ref, "/")
		var sv sharedvolumev1alpha1.SharedVolume
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &sv); err != nil {
			problems = append(problems, fmt.Sprintf("SharedVolume %s: %v", ref, err))
		} else if sv.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady {
			problems = append(problems, fmt.Sprintf("SharedVolume %s is %s: %s", ref, sv.Status.Phase, sv.Status.Message))
		}
	}
	return len(problems) == 0, strings.Join(problems, "; "), nil
}
