package operator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

const uninstallControllerName = "AWSEFSDriverUninstall"

// phase is where the driver's lifecycle stands. It is written as the reason of the
// AWSEFSDriverUninstallProgressing condition, so that a restarted operator resumes from it.
type phase string

const (
	// phaseInstalled: the driver runs, or is installed by library-go's controllers.
	phaseInstalled phase = "AsExpected"
	// phaseInUse: removal is asked for, and pods use EFS volumes: the driver keeps serving them.
	phaseInUse phase = "VolumesInUse"
	// phaseFencing: no pod uses an EFS volume; the fence is being put up and proved.
	phaseFencing phase = "FencingVolumes"
	// phaseSettling: the fence holds; a pod admitted just before it is given time to be seen.
	phaseSettling phase = "SettlingFence"
	// phaseRemoving: the driver's objects are being deleted.
	phaseRemoving phase = "RemovingDriver"
	// phaseRemoved: the driver is gone; a deleted ClusterCSIDriver loses its finalizer.
	phaseRemoved phase = "DriverRemoved"
)

// reasonRemovalFailed is the reason of a Degraded condition when a step of the lifecycle fails.
const reasonRemovalFailed = "RemovalFailed"

// maxListedUses bounds how many pods a condition or event names.
const maxListedUses = 10

// settleTime is how long the fence stays up after library-go's controllers last saw a Removed CR
// (one of them may still be deleting), and how long the operand must stay gone before the driver
// counts as removed (one whose sync began before removal was allowed may still write an object).
const settleTime = 2 * time.Second

// phaseRule is what holds in a phase, and its step: given what the cluster looks like, the phase
// to go to, what the conditions say, and when to look again.
type phaseRule struct {
	// progressing and degraded are the statuses of the two conditions.
	progressing, degraded bool
	// removal is whether library-go's controllers see the Removed (or deleted) CR as it is, and
	// so remove what they apply.
	removal bool
	// fence is whether the removal fence stays up.
	fence bool
	// watch is whether pods are watched: the phases that wait for, or look for, a pod using an
	// EFS volume.
	watch bool
	step  func(*lifecycle, context.Context, crState) (outcome, error)
}

// phases is the lifecycle, one row a phase.
var phases = map[phase]phaseRule{
	phaseInstalled: {step: (*lifecycle).installed},
	phaseInUse:     {progressing: true, degraded: true, watch: true, step: (*lifecycle).inUse},
	phaseFencing:   {progressing: true, fence: true, watch: true, step: (*lifecycle).fencing},
	phaseSettling:  {progressing: true, fence: true, watch: true, step: (*lifecycle).settling},
	phaseRemoving:  {progressing: true, removal: true, fence: true, watch: true, step: (*lifecycle).removing},
	phaseRemoved:   {removal: true, step: (*lifecycle).removed},
}

// crState is the ClusterCSIDriver as one sync saw it.
type crState struct {
	generation int64
	// deleting: the CR is being deleted; removed: it is Removed; managed: it is Managed.
	deleting, removed, managed bool
	recorder                   events.Recorder
}

func (o crState) removalAsked() bool { return o.deleting || o.removed }

// outcome is a step's result: the next phase, the conditions' message, and when to look again
// (zero: at the next event, or at once when the phase changed).
type outcome struct {
	next    phase
	message string
	after   time.Duration
}

// lifecycle removes the driver when the ClusterCSIDriver is deleted or Removed, but only once no
// pod uses an EFS volume: removing a driver under mounted volumes strands them. While pods use
// them, the gate shows the operand controllers a Managed CR, so the driver keeps running, and
// the conditions and an event name the pods. Volumes nobody uses do not hold the removal back,
// and neither the wait nor the removal stops EFS provisioning but for the seconds of the removal
// itself, when the fence refuses new uses.
type lifecycle struct {
	operatorClient v1helpers.OperatorClientWithFinalizers
	dynamic        dynamic.Interface
	mapper         meta.RESTMapper
	volumes        corelisters.PersistentVolumeLister
	objects        []operandObject
	gate           *gate
	fence          *removalFence
	pods           *podWatch

	// phase is the current phase; empty until the first sync reads it from the status.
	phase phase
	// restoredAt is when a removal was last stopped (the CR Managed again, or a volume in use);
	// the fence stays up for settleTime after it.
	restoredAt time.Time
	// stopped is set when a volume in use stopped a removal under way; the conditions say so
	// until the removal resumes or the CR is Managed again.
	stopped bool
	// goneSince is when the operand was first seen fully removed.
	goneSince time.Time
	// inUseSaid is the last message an event said the removal waits with: a pod event makes
	// the lifecycle look again, and only a change is worth another event.
	inUseSaid string
}

// LifecycleResync is how often the lifecycle looks again on its own. Every other look comes from
// a change it watches: the CR, a PersistentVolume, and while a removal waits for them, the pods.
const LifecycleResync = time.Minute

// newLifecycleController runs the lifecycle on changes of the CR and of PersistentVolumes.
func newLifecycleController(l *lifecycle, recorder events.Recorder, volumes factory.Informer) factory.Controller {
	return factory.New().
		WithInformers(l.operatorClient.Informer(), volumes).
		WithSync(l.sync).
		ResyncEvery(LifecycleResync).
		ToController(uninstallControllerName, recorder)
}

func (l *lifecycle) sync(ctx context.Context, syncCtx factory.SyncContext) error {
	spec, status, _, err := l.operatorClient.GetOperatorState()
	if apierrors.IsNotFound(err) {
		// A fence a deleted CR's removal could not take down is not left refusing for good.
		return l.fence.lower(ctx)
	}
	if err != nil {
		return err
	}
	objMeta, err := l.operatorClient.GetObjectMeta()
	if err != nil {
		return err
	}
	in := crState{
		generation: objMeta.Generation,
		deleting:   objMeta.DeletionTimestamp != nil,
		removed:    spec.ManagementState == operatorv1.Removed,
		managed:    spec.ManagementState == operatorv1.Managed,
		recorder:   syncCtx.Recorder(),
	}
	if l.phase == "" {
		// A restarted operator resumes the phase it wrote. The gate opens only once the phase's
		// step has looked at the cluster again.
		l.phase = persistedPhase(status)
	}
	if l.pods.changed == nil {
		queue, key := syncCtx.Queue(), syncCtx.QueueKey()
		l.pods.changed = func() { queue.Add(key) }
	}
	// A step that moves to another phase is followed by that phase's step at once, until a step
	// stays or asks to wait.
	var out outcome
	for range len(phases) {
		was := l.phase
		if err = l.pods.follow(ctx, phases[l.phase].watch); err != nil {
			break
		}
		out, err = phases[l.phase].step(l, ctx, in)
		if err == nil {
			err = l.enter(ctx, out.next)
		}
		if err != nil || out.next == was || out.after > 0 {
			break
		}
	}
	if err == nil {
		err = l.pods.follow(ctx, phases[l.phase].watch)
	}
	if err != nil {
		// A write that lost a race with another writer of the CR (the deletion itself, another
		// controller's status) is retried at once, not reported: Degraded is for what an admin
		// must look at, and a removal blocked on volumes in use read as RemovalFailed for a moment.
		if apierrors.IsConflict(err) {
			return err
		}
		if reportErr := l.report(ctx, in.generation, err.Error(), true); reportErr != nil {
			return errors.Join(err, reportErr)
		}
		return err
	}
	if out.after > 0 {
		syncCtx.Queue().AddAfter(syncCtx.QueueKey(), out.after)
	}
	return l.report(ctx, in.generation, out.message, false)
}

// persistedPhase reads the phase from the Progressing condition an earlier run wrote.
func persistedPhase(status *operatorv1.OperatorStatus) phase {
	if status != nil {
		if c := v1helpers.FindOperatorCondition(status.Conditions, uninstallControllerName+operatorv1.OperatorStatusTypeProgressing); c != nil {
			if _, ok := phases[phase(c.Reason)]; ok {
				return phase(c.Reason)
			}
		}
	}
	return phaseInstalled
}

// enter moves to phase next: the gate and the fence follow its row.
func (l *lifecycle) enter(ctx context.Context, next phase) error {
	from, to := phases[l.phase], phases[next]
	if from.removal && !to.removal {
		l.restoredAt = time.Now()
	}
	l.phase = next
	l.gate.setRemovalAllowed(to.removal)
	if to.fence || l.fenceHeld() > 0 {
		return nil
	}
	return l.fence.lower(ctx)
}

// fenceHeld is how much longer a stopped removal keeps the fence up.
func (l *lifecycle) fenceHeld() time.Duration {
	return max(0, settleTime-time.Since(l.restoredAt))
}

func (l *lifecycle) installed(ctx context.Context, in crState) (outcome, error) {
	l.stopped = false
	if in.removalAsked() {
		return outcome{next: phaseInUse}, nil
	}
	if in.managed {
		if err := v1helpers.EnsureFinalizer(ctx, l.operatorClient, uninstallControllerName); err != nil {
			return outcome{}, err
		}
	}
	return outcome{next: phaseInstalled, after: l.fenceHeld()}, nil
}

func (l *lifecycle) inUse(ctx context.Context, in crState) (outcome, error) {
	if !in.removalAsked() {
		return outcome{next: phaseInstalled}, nil
	}
	uses, err := l.volumesInUse(ctx)
	if err != nil {
		return outcome{}, err
	}
	if len(uses) == 0 {
		l.stopped = false
		return outcome{next: phaseFencing}, nil
	}
	msg := inUseMessage(uses, in.deleting)
	if l.stopped {
		msg = "removal stopped and the driver restored: " + msg
	}
	if msg != l.inUseSaid {
		in.recorder.Warningf(string(phaseInUse), "%s", msg)
		l.inUseSaid = msg
	}
	// The pod watch brings the next look, when a pod comes or goes.
	return outcome{next: phaseInUse, message: msg, after: l.fenceHeld()}, nil
}

func (l *lifecycle) fencing(ctx context.Context, in crState) (outcome, error) {
	if !in.removalAsked() {
		return outcome{next: phaseInstalled}, nil
	}
	const msg = "refusing new uses of EFS volumes before the AWS EFS CSI driver is removed"
	fenced, err := l.raiseFence(ctx, in)
	if err != nil {
		return outcome{}, err
	}
	if !fenced {
		// Nothing to prove: the removal looks again before every object that serves volumes.
		return outcome{next: phaseRemoving}, nil
	}
	wait, err := l.fence.settle(ctx)
	if err != nil {
		return outcome{}, err
	}
	if l.fence.upSince.IsZero() {
		return outcome{next: phaseFencing, message: msg, after: wait}, nil
	}
	return outcome{next: phaseSettling, message: msg, after: wait}, nil
}

// raiseFence puts the fence up over the claims bound to EFS volumes now.
func (l *lifecycle) raiseFence(ctx context.Context, in crState) (bool, error) {
	claims, err := l.claims()
	if err != nil {
		return false, err
	}
	return l.fence.raise(ctx, in.recorder, claims, fenceMessage(in.deleting))
}

func (l *lifecycle) settling(ctx context.Context, in crState) (outcome, error) {
	if !in.removalAsked() {
		return outcome{next: phaseInstalled}, nil
	}
	// A claim bound just before the fence came up is added to it, and the fence proved again. A
	// restarted operator has not seen the fence hold.
	if _, err := l.raiseFence(ctx, in); err != nil || l.fence.upSince.IsZero() {
		return outcome{next: phaseFencing}, err
	}
	if wait := fenceSettle - time.Since(l.fence.upSince); wait > 0 {
		return outcome{next: phaseSettling, after: wait}, nil
	}
	// The last look: from now on no new use can begin.
	uses, err := l.volumesInUse(ctx)
	if err != nil || len(uses) > 0 {
		return outcome{next: phaseInUse}, err
	}
	in.recorder.Eventf(string(phaseRemoving), "No pod uses an EFS volume: removing the AWS EFS CSI driver")
	return outcome{next: phaseRemoving}, nil
}

func (l *lifecycle) removing(ctx context.Context, in crState) (outcome, error) {
	if !in.removalAsked() {
		return outcome{next: phaseInstalled}, nil
	}
	// A use found now got past the fence (an admin took it down, or the cluster has none): the
	// removal stops and the operand controllers put back what was removed.
	uses, err := l.volumesInUse(ctx)
	if err != nil {
		return outcome{}, err
	}
	if len(uses) > 0 {
		l.stopped = true
		return outcome{next: phaseInUse}, nil
	}
	present, err := l.present(ctx)
	if err != nil {
		return outcome{}, err
	}
	if len(present) > 0 {
		l.goneSince = time.Time{}
		if err := l.delete(ctx, present); errors.Is(err, errVolumeInUse) {
			return outcome{next: phaseRemoving, after: time.Millisecond}, nil
		} else if err != nil {
			return outcome{}, err
		}
		return outcome{next: phaseRemoving, message: fmt.Sprintf("removing %d objects", len(present)), after: time.Second}, nil
	}
	if l.goneSince.IsZero() {
		l.goneSince = time.Now()
	}
	if wait := settleTime - time.Since(l.goneSince); wait > 0 {
		return outcome{next: phaseRemoving, message: "removing the AWS EFS CSI driver", after: wait}, nil
	}
	return outcome{next: phaseRemoved}, nil
}

func (l *lifecycle) removed(ctx context.Context, in crState) (outcome, error) {
	if !in.removalAsked() {
		return outcome{next: phaseInstalled}, nil
	}
	if in.deleting {
		if err := v1helpers.RemoveFinalizer(ctx, l.operatorClient, uninstallControllerName); err != nil && !apierrors.IsNotFound(err) {
			return outcome{}, err
		}
	}
	return outcome{next: phaseRemoved, message: "the AWS EFS CSI driver is removed"}, nil
}

// report writes the conditions of the phase (Degraded with RemovalFailed when a step failed) and
// the generation of the CR they answer: the controller that decides what the driver's lifecycle
// is doing owns status.observedGeneration, so that admins and tests can tell when a change of
// managementState has been taken in. library-go writes only what changed.
func (l *lifecycle) report(ctx context.Context, generation int64, message string, failed bool) error {
	rule := phases[l.phase]
	status := func(b bool) operatorv1.ConditionStatus {
		if b {
			return operatorv1.ConditionTrue
		}
		return operatorv1.ConditionFalse
	}
	degraded, degradedReason := status(rule.degraded), string(l.phase)
	if failed {
		degraded, degradedReason = operatorv1.ConditionTrue, reasonRemovalFailed
	}
	apply := applyoperatorv1.OperatorStatus().WithObservedGeneration(generation).WithConditions(
		condition(uninstallControllerName+operatorv1.OperatorStatusTypeDegraded, degraded, degradedReason, message),
		condition(uninstallControllerName+operatorv1.OperatorStatusTypeProgressing, status(rule.progressing), string(l.phase), message),
	)
	return l.operatorClient.ApplyOperatorStatus(ctx, uninstallControllerName, apply)
}

// fenceMessage is what the fence's refusals say, besides what they refuse.
func fenceMessage(deleting bool) string {
	if deleting {
		return fmt.Sprintf("ClusterCSIDriver %s is being deleted, and the AWS EFS CSI driver is being removed now that no pod uses an EFS volume; "+
			"a deletion cannot be undone: create the ClusterCSIDriver again once it is gone to reinstall the driver", efs.CRName)
	}
	return fmt.Sprintf("ClusterCSIDriver %s is Removed, and the AWS EFS CSI driver is being removed now that no pod uses an EFS volume; "+
		"set its managementState to Managed to keep the driver", efs.CRName)
}

// volumeUse is a pod that uses a claim bound to an EFS PersistentVolume.
type volumeUse struct {
	namespace, pod, claim, volume string
}

// claimsByVolume maps each namespace's claims bound (or pre-bound) to an EFS PersistentVolume to
// the volume, from the PersistentVolume informer.
func (l *lifecycle) claimsByVolume() (map[string]map[string]string, error) {
	pvs, err := l.volumes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumes: %w", err)
	}
	claims := map[string]map[string]string{}
	for _, pv := range pvs {
		if !isEFSVolume(pv) || pv.Spec.ClaimRef == nil {
			continue
		}
		ref := pv.Spec.ClaimRef
		if claims[ref.Namespace] == nil {
			claims[ref.Namespace] = map[string]string{}
		}
		claims[ref.Namespace][ref.Name] = pv.Name
	}
	return claims, nil
}

// claims is the fence's parameter: each namespace's claims bound to EFS volumes.
func (l *lifecycle) claims() (map[string][]string, error) {
	byVolume, err := l.claimsByVolume()
	if err != nil {
		return nil, err
	}
	claims := map[string][]string{}
	for ns, names := range byVolume {
		for name := range names {
			claims[ns] = append(claims[ns], name)
		}
	}
	return claims, nil
}

// volumesInUse reads from the pod watch the pods, finished ones aside, that use a claim bound
// to an EFS PersistentVolume, in the namespaces that hold such claims: a pod can use only claims
// of its own namespace. A generic ephemeral volume's claim is named after the pod and the volume.
func (l *lifecycle) volumesInUse(ctx context.Context) ([]volumeUse, error) {
	claims, err := l.claimsByVolume()
	if err != nil {
		return nil, err
	}
	var uses []volumeUse
	for _, ns := range slices.Sorted(maps.Keys(claims)) {
		pods, err := l.pods.podsIn(ctx, ns)
		if err != nil {
			return nil, fmt.Errorf("reading the pods of namespace %s: %w", ns, err)
		}
		slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		for _, pod := range pods {
			if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, v := range pod.Spec.Volumes {
				claim := ""
				switch {
				case v.PersistentVolumeClaim != nil:
					claim = v.PersistentVolumeClaim.ClaimName
				case v.Ephemeral != nil:
					claim = pod.Name + "-" + v.Name
				}
				if pv, ok := claims[ns][claim]; ok {
					uses = append(uses, volumeUse{namespace: ns, pod: pod.Name, claim: claim, volume: pv})
				}
			}
		}
	}
	return uses, nil
}

// inUseMessage says which pods hold the removal back, and how an admin backs out.
func inUseMessage(uses []volumeUse, deleting bool) string {
	pods := map[string]bool{}
	var named []string
	for _, u := range uses {
		pods[u.namespace+"/"+u.pod] = true
		if len(named) < maxListedUses {
			named = append(named, fmt.Sprintf("pod %s/%s uses claim %s of PersistentVolume %s", u.namespace, u.pod, u.claim, u.volume))
		}
	}
	if len(uses) > len(named) {
		named = append(named, fmt.Sprintf("and %d more", len(uses)-len(named)))
	}
	who := fmt.Sprintf("%d pods use", len(pods))
	if len(pods) == 1 {
		who = "1 pod uses"
	}
	msg := fmt.Sprintf("the AWS EFS CSI driver is not removed while %s EFS volumes (%s): stop them (EFS volumes no pod uses do not hold the removal back)",
		who, strings.Join(named, "; "))
	if deleting {
		// An admin who edits the CR back to Managed expects the uninstall to stop, but nothing
		// undoes a deletion: say so, and what gets the driver back.
		return msg + fmt.Sprintf(". ClusterCSIDriver %s is being deleted, and a deletion cannot be undone, not even by setting managementState back to Managed: "+
			"the driver keeps serving the volumes until no pod uses them, then it is removed; create the ClusterCSIDriver again afterwards to reinstall it", efs.CRName)
	}
	return msg + ", or set managementState back to Managed to keep the driver"
}

func isEFSVolume(pv *corev1.PersistentVolume) bool {
	return pv.Spec.CSI != nil && pv.Spec.CSI.Driver == efs.DriverName
}

// efsVolumesOnly is the PersistentVolume informer's transform: it keeps of an EFS volume what the
// lifecycle reads (its driver and its claim's namespace and name) and of any other volume only
// its name, so that the cluster's other volumes cost the operator next to no memory, and each
// SharedVolume's as little as may be.
func efsVolumesOnly(obj any) (any, error) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return obj, nil
	}
	kept := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv.Name, ResourceVersion: pv.ResourceVersion}}
	if isEFSVolume(pv) {
		kept.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: efs.DriverName}
		if ref := pv.Spec.ClaimRef; ref != nil {
			kept.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ref.Namespace, Name: ref.Name}
		}
	}
	return kept, nil
}
