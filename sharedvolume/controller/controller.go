package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
)

// FieldManager names the controller's writes.
const FieldManager = "aws-efs-csi-driver-operator-sharedvolume"

// ConditionReady is the condition type of a SharedVolume whose claim is bound and mountable.
const ConditionReady = "Ready"

// ConditionSpecReverted is the condition type the controller sets, True, when it has put back a
// spec that was edited after its PV was made; its message names each field with the value the
// PV records and the value that was refused. It records the latest revert and stays until another
// replaces it. The API server refuses such edits itself from Kubernetes 1.25; older ones ignore
// the CRD's rule, as they drop every x-kubernetes-validations rule.
const ConditionSpecReverted = "SpecReverted"

// Reasons of the Ready condition and of events.
const (
	ReasonBound      = "Bound"
	ReasonBinding    = "WaitingForBinding"
	ReasonCollision  = "NameCollision"
	ReasonNotAllowed = "FileSystemNotAllowed"
	ReasonMismatch   = "VolumeMismatch"
	ReasonDeleting   = "Deleting"
	// ReasonVolumesKept: the SharedVolume went with its CRD (an uninstall), its claim and
	// volume stay.
	ReasonVolumesKept = "VolumesKept"
	// ReasonNameTooLong: the SharedVolume's name cannot name or label its PV and PVC.
	ReasonNameTooLong = "NameTooLong"
	// ReasonVolumeRefused: admission refused the PV, as it does while the driver is removed.
	ReasonVolumeRefused = "VolumeRefused"
	// ReasonReservedVolumeDeleted: the SharedVolume's PV, reserved for a claim name that
	// someone else's claim holds, was deleted before the binder could bind the two.
	ReasonReservedVolumeDeleted = "ReservedVolumeDeleted"
	// ReasonSpecEdited is the reason of the SpecReverted condition and of the warning event sent
	// when a spec edit is reverted.
	ReasonSpecEdited = "ImmutableSpecEdited"
)

// Reconciler reconciles SharedVolumes.
type Reconciler struct {
	client.Client
	// Reader reads objects the cache does not hold: those without the ownership labels.
	Reader   client.Reader
	Recorder record.EventRecorder
	// lastBind is when a reconcile last found, in the cache, a claim bound whose SharedVolume
	// was not Ready yet (Unix nanoseconds): the binder is at work and the cache's watch brings
	// its bindings.
	lastBind atomic.Int64
	// lastClaimEvent is when the claim informer last delivered an event (Unix nanoseconds),
	// its first list included.
	lastClaimEvent atomic.Int64
	// started is when the first reconcile began (Unix nanoseconds). SharedVolumes made before
	// it waited for this process (backlog).
	started atomic.Int64
	// slots bounds how many reconciles of SharedVolumes made since started run at once, and
	// arrivingSlots bounds them further while new SharedVolumes keep arriving (arriving).
	slots, arrivingSlots chan struct{}
	// lastArrival is when the SharedVolume informer last delivered a new SharedVolume (Unix
	// nanoseconds).
	lastArrival atomic.Int64
	// lastPair is the claim this controller made last, and when.
	lastPair atomic.Pointer[pairMade]
	// readyHeld maps each SharedVolume whose Ready status is held back (readyWait) to when it
	// first was.
	readyHeld sync.Map
}

// pairMade records that a SharedVolume's claim, the second of its pair, was made.
type pairMade struct {
	sharedVolume types.NamespacedName
	at           time.Time
}

// SetupWithManager registers the controller. PV and PVC events map back to their SharedVolume
// through the ownership labels. SharedVolumes made since the controller started are reconciled
// by workers at once, a backlog made before it by backlogWorkers (Options).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers, backlogWorkers int) error {
	r.slots = make(chan struct{}, workers)
	r.arrivingSlots = make(chan struct{}, max(1, workers/4))
	toOwner := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		l := obj.GetLabels()
		if l[efs.SharedVolumeOwnerNamespaceLabel] == "" || l[efs.SharedVolumeOwnerNameLabel] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[efs.SharedVolumeOwnerNamespaceLabel], Name: l[efs.SharedVolumeOwnerNameLabel]}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("sharedvolume").
		For(&sharedvolumev1alpha1.SharedVolume{}, builder.WithPredicates(noteArrivals(&r.lastArrival))).
		Watches(&corev1.PersistentVolumeClaim{}, toOwner, builder.WithPredicates(noteEvents(&r.lastClaimEvent), volumeEvents)).
		Watches(&corev1.PersistentVolume{}, toOwner, builder.WithPredicates(volumeEvents)).
		// Run may start the controller again in a process whose previous one stopped.
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, backlogWorkers), SkipNameValidation: ptr.To(true), RateLimiter: retryLimiter()}).
		Complete(r)
}

// Retries of a failed reconcile back off from retryBase to retryCap, with at most retryQPS
// (burst retryBurst) retries a second in all.
const (
	retryBase  = 5 * time.Millisecond
	retryCap   = 10 * time.Second
	retryQPS   = 50
	retryBurst = 500
)

// retryLimiter paces retries. controller-runtime's default backs a failing SharedVolume off,
// doubling from 5 ms, up to 1,000 s, and retries at most 10 a second in all. Every SharedVolume
// in flight fails all through an API server outage: after 30 s down, the next try of each is
// some 40 s away, after five minutes some five minutes away, and then 200 of them take 20 s
// more at 10 a second. Capped at 10 s, each is tried again soon after the server returns. API
// Priority and Fairness protects the server, and the overall limit still spreads the retries.
func retryLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBase, retryCap),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(retryQPS), retryBurst)},
	)
}

// Reconcile brings one SharedVolume's PV and PVC to the desired state and writes its status
// once, if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, err error) {
	defer func() {
		if err != nil {
			ReconcileErrors.Inc()
		}
	}()
	r.started.CompareAndSwap(0, time.Now().UnixNano())
	sv := &sharedvolumev1alpha1.SharedVolume{}
	if err := r.Get(ctx, req.NamespacedName, sv); err != nil {
		r.readyHeld.Delete(req.NamespacedName)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if _, held := r.readyHeld.Load(req.NamespacedName); held && sv.DeletionTimestamp == nil {
		// Looked at again without taking a turn from those whose pairs are still to be made.
		if wait := r.readyWait(req.NamespacedName); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	release, err := r.admit(ctx, sv)
	if err != nil {
		return reconcile.Result{}, err
	}
	defer release()
	result, err = r.reconcile(ctx, sv)
	if apierrors.IsConflict(err) && r.Reader != nil {
		// The cache may be behind the API server for long: after an API server restart its
		// watch comes back only after client-go's backoff, and until then every write from it
		// conflicts. The control-plane campaign saw SharedVolumes wait 30 s that way, with their
		// claims Bound. The API server's copy is current.
		sv = &sharedvolumev1alpha1.SharedVolume{}
		if err := r.Reader.Get(ctx, req.NamespacedName, sv); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		result, err = r.reconcile(ctx, sv)
	}
	if apierrors.IsConflict(err) {
		// Someone changed it meanwhile: the next reconcile reads the newer one. It is no error.
		return reconcile.Result{Requeue: true}, nil
	}
	return result, err
}

// reconcile does the work of Reconcile on the SharedVolume read. A write refused because the
// SharedVolume changed since it was read is returned as the conflict it is.
func (r *Reconciler) reconcile(ctx context.Context, sv *sharedvolumev1alpha1.SharedVolume) (reconcile.Result, error) {
	if sv.DeletionTimestamp != nil {
		return r.delete(ctx, sv)
	}
	if !controllerutil.ContainsFinalizer(sv, efs.SharedVolumeFinalizer) {
		patch := client.MergeFrom(sv.DeepCopy())
		controllerutil.AddFinalizer(sv, efs.SharedVolumeFinalizer)
		if err := r.Patch(ctx, sv, patch, client.FieldOwner(FieldManager)); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}
	// The PV is read from the cache only. One the cache does not hold (someone else's, which is
	// unlabelled, or one made a moment ago) is found by its create, which then fails with
	// AlreadyExists: asking the API server first cost every new SharedVolume a read.
	pv := &corev1.PersistentVolume{}
	pvErr := r.Get(ctx, client.ObjectKey{Name: volumes.PVName(sv)}, pv)
	if pvErr != nil && !apierrors.IsNotFound(pvErr) {
		return reconcile.Result{}, fmt.Errorf("reading PersistentVolume %s: %w", volumes.PVName(sv), pvErr)
	}
	var reverted *metav1.Condition
	if pvErr == nil {
		var err error
		if reverted, err = r.keepSpec(ctx, sv, pv); err != nil {
			return reconcile.Result{}, err
		}
	}
	status, hold, err := r.ensure(ctx, sv, pv, pvErr)
	if err != nil {
		return reconcile.Result{}, err
	}
	key := client.ObjectKeyFromObject(sv)
	if reverted != nil {
		meta.SetStatusCondition(&status.Conditions, *reverted)
	} else if hold > 0 {
		return reconcile.Result{RequeueAfter: hold}, nil
	} else if status.Phase == sharedvolumev1alpha1.SharedVolumeReady && sv.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady {
		if wait := r.readyWait(key); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	if err := r.writeStatus(ctx, sv, status); err != nil {
		return reconcile.Result{}, err
	}
	r.readyHeld.Delete(key)
	if status.Phase == sharedvolumev1alpha1.SharedVolumePending {
		return reconcile.Result{RequeueAfter: recheckAfter(status)}, nil
	}
	return reconcile.Result{}, nil
}

// getAny reads an object from the cache and, when the cache does not have it, from the API
// server: the cache holds only the PVs labelled as a SharedVolume's, and a colliding PV is
// unlabelled; and a claim made a moment ago may not be in the cache yet.
func (r *Reconciler) getAny(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && r.Reader != nil {
		return r.serverCopy(ctx, key, obj)
	}
	return err
}

// serverCopy reads an object from the API server's own watch cache (resourceVersion 0), not
// from etcd. What it stands in for is this process's cache, which lags when its watch broke;
// the server's is current within milliseconds, also right after a restart, when it is filled
// from etcd before the server serves. A quorum read would cost etcd a round trip for each
// new SharedVolume (two, one per name it checks) and for each claim overdue at a recheck.
func (r *Reconciler) serverCopy(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	return r.Reader.Get(ctx, key, obj, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
}
