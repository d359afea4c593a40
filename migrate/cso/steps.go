package cso

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/migrate/internal/migration"
)

const fieldManager = "csi-olm-migrate"

// The steps' names, as the journal records them.
const (
	deleteSubscriptionStep     = "delete-subscription"
	deleteCSVStep              = "delete-csv"
	waitOperatorRemovedStep    = "wait-operator-removed"
	releaseOldCRStep           = "release-old-cr"
	createClusterCSIDriverStep = "create-clustercsidriver"
	checkOperandsStep          = "check-operands"
)

var stepNames = []string{deleteSubscriptionStep, deleteCSVStep, waitOperatorRemovedStep, releaseOldCRStep, createClusterCSIDriverStep, checkOperandsStep}

func (m *Migrate) steps(c client.Client, d driver, plan *Plan) []migration.Step {
	wait := func(what string, check func(context.Context) (bool, string, error)) func(context.Context) error {
		return func(ctx context.Context) error { return migration.Wait(ctx, m.Progress, what, m.Timeout, check) }
	}
	sub := client.ObjectKey{Namespace: plan.Namespace, Name: plan.Subscription}
	csv := client.ObjectKey{Namespace: plan.Namespace, Name: plan.CSV}
	return []migration.Step{{
		Name:        deleteSubscriptionStep,
		Description: fmt.Sprintf("delete Subscription %s and its InstallPlans, so that OLM stops managing the operator", sub),
		Do: func(ctx context.Context) error {
			if err := deleteAndWait(ctx, c, "Subscription", &operatorsv1alpha1.Subscription{}, sub, wait); err != nil {
				return err
			}
			// The garbage collector would delete them too, but until it does OLM may carry out
			// an InstallPlan again and re-create the CSV the next step deletes.
			return wait("the InstallPlans of Subscription "+sub.String()+" to go", installPlansGone(c, sub))(ctx)
		},
	}, {
		Name:        deleteCSVStep,
		Description: fmt.Sprintf("delete CSV %s, so that OLM removes the operator", csv),
		Do: func(ctx context.Context) error {
			return deleteAndWait(ctx, c, "CSV", &operatorsv1alpha1.ClusterServiceVersion{}, csv, wait)
		},
	}, {
		Name: waitOperatorRemovedStep,
		Description: fmt.Sprintf("wait until OLM removed the operator's Deployment and its pods are gone (they are not deleted here), "+
			"and the Subscription, its InstallPlans and the CSV stayed gone for %s", settle),
		Do: wait("OLM to remove the operator", olmLetGo(c, plan, sub, csv)),
	}, {
		Name:        releaseOldCRStep,
		Description: fmt.Sprintf("remove the finalizers of %s, then delete it, so that the old operator's uninstall never runs", plan.CR),
		Do: func(ctx context.Context) error {
			if err := releaseOldCR(ctx, c, d); err != nil {
				return err
			}
			return wait(plan.CR+" to go", gone(c, d.cr(), client.ObjectKey{Name: "cluster"}))(ctx)
		},
	}, {
		Name:        createClusterCSIDriverStep,
		Description: fmt.Sprintf("create ClusterCSIDriver %s, which the CSO-era operator watches", d.clusterCSIDriver),
		Do: func(ctx context.Context) error {
			cr := &operatorv1.ClusterCSIDriver{
				ObjectMeta: metav1.ObjectMeta{Name: d.clusterCSIDriver},
				Spec:       operatorv1.ClusterCSIDriverSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			}
			if err := c.Create(ctx, cr, client.FieldOwner(fieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating ClusterCSIDriver %s: %w", d.clusterCSIDriver, err)
			}
			return nil
		},
	}, {
		Name:        checkOperandsStep,
		Description: "check that every operand recorded before the migration is still there",
		Do:          func(ctx context.Context) error { return operandsIntact(ctx, c, plan) },
	}}
}

// deleteAndWait deletes an object, if it still exists, and waits until it is gone. An object
// that is there again without being deleted was re-created meanwhile (OLM was seen to re-create a
// CSV from its InstallPlan right after the CSV's deletion completed): it is deleted again.
func deleteAndWait(ctx context.Context, c client.Client, kind string, obj client.Object, key client.ObjectKey, wait func(string, func(context.Context) (bool, string, error)) func(context.Context) error) error {
	return wait(fmt.Sprintf("%s %s to go", kind, key), func(ctx context.Context) (bool, string, error) {
		there, status, err := deleteIfThere(ctx, c, kind, obj, key)
		return !there, status, err
	})(ctx)
}

// deleteIfThere deletes an object that exists and is not being deleted yet, and reports whether
// it is there.
func deleteIfThere(ctx context.Context, c client.Client, kind string, obj client.Object, key client.ObjectKey) (bool, string, error) {
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	err := c.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, "", nil
	case err != nil:
		return true, "cannot read it: " + err.Error(), nil
	case obj.GetDeletionTimestamp() == nil:
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return true, "", fmt.Errorf("deleting %s %s: %w", kind, key, err)
		}
		return true, "deleted", nil
	}
	return true, fmt.Sprintf("still there, finalizers %v", obj.GetFinalizers()), nil
}

// settle is how long the operator's OLM objects must stay gone before the hand-over goes on. OLM
// acts on informer caches: one that has not seen the Subscription's deletion yet resolves it
// again, creates an InstallPlan and re-creates the CSV, seconds after the CSV was deleted.
const settle = 5 * time.Second

// olmLetGo waits for OLM to remove the operator, deleting again the Subscription, InstallPlans
// or CSV should OLM re-create one, and reports done once all of them stayed gone for settle.
func olmLetGo(c client.Client, plan *Plan, sub, csv client.ObjectKey) func(context.Context) (bool, string, error) {
	var quietSince time.Time
	return func(ctx context.Context) (bool, string, error) {
		var left []string
		for _, o := range []struct {
			kind string
			obj  client.Object
			key  client.ObjectKey
		}{
			{"Subscription", &operatorsv1alpha1.Subscription{}, sub},
			{"CSV", &operatorsv1alpha1.ClusterServiceVersion{}, csv},
		} {
			there, status, err := deleteIfThere(ctx, c, o.kind, o.obj, o.key)
			if err != nil {
				return false, "", err
			}
			if there {
				left = append(left, fmt.Sprintf("%s %s is back (%s)", o.kind, o.key, status))
			}
		}
		for _, check := range []func(context.Context) (bool, string, error){
			installPlansGone(c, sub),
			func(ctx context.Context) (bool, string, error) { return operatorGone(ctx, c, plan) },
		} {
			done, status, err := check(ctx)
			if err != nil {
				return false, "", err
			}
			if !done {
				left = append(left, status)
			}
		}
		if len(left) > 0 {
			quietSince = time.Time{}
			return false, strings.Join(left, "; "), nil
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
		}
		if quiet := time.Since(quietSince); quiet < settle {
			return false, fmt.Sprintf("all gone for %s, making sure OLM does not re-create them", quiet.Round(time.Second)), nil
		}
		return true, "", nil
	}
}

// installPlansGone deletes the InstallPlans that a Subscription owns and reports when none is left.
func installPlansGone(c client.Client, sub client.ObjectKey) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		var plans operatorsv1alpha1.InstallPlanList
		if err := c.List(ctx, &plans, client.InNamespace(sub.Namespace)); err != nil {
			return false, "cannot list InstallPlans: " + err.Error(), nil
		}
		var left []string
		for i := range plans.Items {
			ip := &plans.Items[i]
			owned := slices.ContainsFunc(ip.OwnerReferences, func(o metav1.OwnerReference) bool {
				return o.Kind == operatorsv1alpha1.SubscriptionKind && o.Name == sub.Name
			})
			if !owned {
				continue
			}
			left = append(left, ip.Name)
			if ip.DeletionTimestamp == nil {
				if err := c.Delete(ctx, ip); err != nil && !apierrors.IsNotFound(err) {
					return false, "", fmt.Errorf("deleting InstallPlan %s/%s: %w", ip.Namespace, ip.Name, err)
				}
			}
		}
		if len(left) > 0 {
			return false, "still there: InstallPlans " + strings.Join(left, ", "), nil
		}
		return true, "", nil
	}
}

func gone(c client.Client, obj client.Object, key client.ObjectKey) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "cannot read it: " + err.Error(), nil
		}
		return false, fmt.Sprintf("still there, finalizers %v", obj.GetFinalizers()), nil
	}
}

// operatorGone waits for OLM and the garbage collector: deleting the operator ourselves could
// race with OLM re-creating it.
func operatorGone(ctx context.Context, c client.Client, plan *Plan) (bool, string, error) {
	var left []string
	for name, selector := range plan.OperatorDeployments {
		var d appsv1.Deployment
		err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: name}, &d)
		if err == nil {
			left = append(left, "Deployment "+name)
		} else if !apierrors.IsNotFound(err) {
			left = append(left, "cannot read Deployment "+name+": "+err.Error())
		}
		pods, err := podsOf(ctx, c, plan.Namespace, selector)
		if err != nil {
			left = append(left, "cannot list the pods of "+name+": "+err.Error())
		} else if pods > 0 {
			left = append(left, fmt.Sprintf("%d pods of %s", pods, name))
		}
	}
	return len(left) == 0, strings.Join(left, ", ") + " still there", nil
}

// releaseOldCR removes the old operator's finalizers and deletes the CR. Both writes are tied to
// the version read, so a finalizer added in between fails the step rather than running.
func releaseOldCR(ctx context.Context, c client.Client, d driver) error {
	cr := d.cr()
	key := client.ObjectKey{Name: "cluster"}
	if err := c.Get(ctx, key, cr); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading %s cluster: %w", d.crKind, err)
	}
	if len(cr.GetFinalizers()) > 0 {
		released := cr.DeepCopyObject().(client.Object)
		released.SetFinalizers(nil)
		if err := c.Patch(ctx, released, client.MergeFromWithOptions(cr, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldManager)); err != nil {
			return fmt.Errorf("removing the finalizers %v of %s cluster: %w", cr.GetFinalizers(), d.crKind, err)
		}
		cr = released
	}
	if cr.GetDeletionTimestamp() != nil {
		return nil
	}
	uid, version := cr.GetUID(), cr.GetResourceVersion()
	err := c.Delete(ctx, cr, client.Preconditions{UID: &uid, ResourceVersion: &version})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s cluster: %w", d.crKind, err)
	}
	return nil
}

// operandsIntact fails when an operand that existed before the migration is gone or re-created.
func operandsIntact(ctx context.Context, c client.Client, plan *Plan) error {
	var problems []string
	for _, o := range plan.Operands {
		if o.UID == "" {
			continue
		}
		obj := o.object()
		err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			problems = append(problems, o.String()+" is gone")
		case err != nil:
			problems = append(problems, fmt.Sprintf("cannot read %s: %v", o, err))
		case obj.GetUID() != types.UID(o.UID):
			problems = append(problems, o.String()+" was re-created")
		case obj.GetDeletionTimestamp() != nil:
			problems = append(problems, o.String()+" is being deleted")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("operands were disturbed during the migration: %s", strings.Join(problems, "; "))
	}
	return nil
}

// podsOf counts the pods a Deployment's selector matches.
func podsOf(ctx context.Context, c client.Client, namespace string, selector map[string]string) (int, error) {
	if len(selector) == 0 {
		return 0, nil
	}
	var pods corev1.PodList
	err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels(selector))
	return len(pods.Items), err
}
