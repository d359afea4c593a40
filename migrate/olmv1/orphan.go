package olmv1

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// holdFinalizer is the migration's finalizer on an owner it deletes with the orphan policy.
const holdFinalizer = "migrate.csi-olm.io/release-owned-objects"

// orphanDelete deletes owner, as read from the cluster (what), with the orphan policy, and takes
// its owner references off the objects the plan keeps before it goes. The garbage collector's
// orphaning frees only the dependents its informers already show, and the owner's controller may
// still be applying its objects, owner references included, when the deletion begins (adding the
// finalizer is itself a change it reconciles); once the owner is gone the collector deletes every
// object that still names it (a CRD with every resource of its kind). So the migration's own
// finalizer holds the owner until every other finalizer is done (the controller has stopped, the
// collector has orphaned what it knew), and until the migration has taken the references off
// every object the plan keeps itself.
func orphanDelete(ctx context.Context, c client.Client, owner client.Object, what string, kept []Object, timeout time.Duration) error {
	uid := owner.GetUID()
	if owner.GetDeletionTimestamp() == nil {
		// A finalizer cannot be added once the deletion has begun: it goes on first.
		if err := setHold(ctx, c, owner, uid, true); err != nil {
			return fmt.Errorf("holding %s until the objects it owns are freed: %w", what, err)
		}
		err := c.Delete(ctx, owner, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationOrphan))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", what, err)
		}
	}
	var others []string
	err := wait.PollUntilContextTimeout(ctx, time.Second/2, timeout, true, func(ctx context.Context) (bool, error) {
		if there, err := reread(ctx, c, owner, uid); !there || err != nil {
			return !there, err
		}
		others = slices.DeleteFunc(slices.Clone(owner.GetFinalizers()), func(f string) bool { return f == holdFinalizer })
		return len(others) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the other finalizers of %s (%s) to finish: %w", what, strings.Join(others, ", "), err)
	}
	var problems []string
	for _, o := range kept {
		err := update(ctx, c, o, func(u *unstructured.Unstructured) {
			u.SetOwnerReferences(slices.DeleteFunc(u.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid }))
		})
		// What is gone or replaced already, the last step reports.
		if err != nil && !apierrors.IsNotFound(err) && !errors.Is(err, errReplaced) {
			problems = append(problems, fmt.Sprintf("%s: %v", o, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("taking the owner references to %s off %d objects failed, so it stays held:\n  - %s", what, len(problems), strings.Join(problems, "\n  - "))
	}
	if err := setHold(ctx, c, owner, uid, false); err != nil {
		return fmt.Errorf("letting %s go: %w", what, err)
	}
	return nil
}

// setHold puts the migration's finalizer on the owner of the given UID, or takes it off; an owner
// gone or replaced needs neither.
func setHold(ctx context.Context, c client.Client, owner client.Object, uid types.UID, hold bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if there, err := reread(ctx, c, owner, uid); !there || err != nil {
			return err
		}
		changed := controllerutil.RemoveFinalizer(owner, holdFinalizer)
		if hold {
			changed = controllerutil.AddFinalizer(owner, holdFinalizer)
		}
		if !changed {
			return nil
		}
		return c.Update(ctx, owner, client.FieldOwner(fieldManager))
	})
}

// reread reads owner again and says whether it is still the object of the given UID.
func reread(ctx context.Context, c client.Client, owner client.Object, uid types.UID) (bool, error) {
	switch err := c.Get(ctx, client.ObjectKeyFromObject(owner), owner); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return owner.GetUID() == uid, nil
}
