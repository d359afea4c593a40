package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricstestutil "k8s.io/component-base/metrics/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/controller"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestSpecIsImmutable: with the shipped CRD, the API server itself refuses a change of either
// field, and lets every other change through.
func TestSpecIsImmutable(t *testing.T) {
	b := newBed(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.namespace(ctx, "team-a", nil)
	v := sv("team-a", "data", "fs-0123cdef", "fsap-0123456789abcdef")
	must(t, b.c.Create(ctx, v))
	for _, edit := range []struct {
		name string
		spec sharedvolumev1alpha1.SharedVolumeSpec
	}{
		{"fileSystemID", sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-99999999", AccessPointID: v.Spec.AccessPointID}},
		{"accessPointID", sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: v.Spec.FileSystemID, AccessPointID: "fsap-99999999"}},
	} {
		edited := v.DeepCopy()
		edited.Spec = edit.spec
		if err := b.c.Update(ctx, edited); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
			t.Errorf("%s: err = %v, want the API server to refuse a spec change", edit.name, err)
		}
	}
	labelled := v.DeepCopy()
	labelled.Labels = map[string]string{"team": "a"}
	must(t, b.c.Update(ctx, labelled))
	must(t, b.c.Get(ctx, client.ObjectKeyFromObject(v), v))
	if v.Spec.FileSystemID != "fs-0123cdef" || v.Spec.AccessPointID != "fsap-0123456789abcdef" {
		t.Errorf("spec = %+v after refused edits", v.Spec)
	}
}

// TestSpecEditIsRevertedWhereTheRuleIsIgnored runs the controller against an API server that
// ignores the CRD's immutability rule, as Kubernetes older than 1.25 does (the EFS bundle installs
// from OpenShift 4.9, Kubernetes 1.22): an edit of a bound SharedVolume's spec is accepted by the
// API server, and the controller puts the spec back from its PV, says so in an event and in the
// SpecReverted condition, and leaves the PV and PVC exactly as they were.
func TestSpecEditIsRevertedWhereTheRuleIsIgnored(t *testing.T) {
	b := newBedWith(t, testutil.WithoutValidationRules(shippedCRD(t)))
	b.run()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b.namespace(ctx, "team-a", nil)
	v := sv("team-a", "data", "fs-0123cdef", "fsap-0123456789abcdef")
	original := v.Spec
	must(t, b.c.Create(ctx, v))
	must(t, eventually(ctx, "Ready", b.phase(v, sharedvolumev1alpha1.SharedVolumeReady)))
	pv := &corev1.PersistentVolume{}
	pvc := &corev1.PersistentVolumeClaim{}
	must(t, b.c.Get(ctx, client.ObjectKey{Name: "pv-team-a-data"}, pv))
	must(t, b.c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "pvc-data"}, pvc))

	edits := []struct {
		name string
		spec sharedvolumev1alpha1.SharedVolumeSpec
		want []string // in the condition and event message
	}{
		{
			"both fields", sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-99999999", AccessPointID: "fsap-99999999"},
			[]string{"spec.fileSystemID from fs-0123cdef to fs-99999999", "spec.accessPointID from fsap-0123456789abcdef to fsap-99999999"},
		},
		{
			"accessPointID only", sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123cdef", AccessPointID: "fsap-0a0a"},
			[]string{"spec.accessPointID from fsap-0123456789abcdef to fsap-0a0a"},
		},
	}
	for _, edit := range edits {
		must(t, b.c.Get(ctx, client.ObjectKeyFromObject(v), v))
		editedGeneration := v.Generation + 1
		v.Spec = edit.spec
		if err := b.c.Update(ctx, v); err != nil {
			t.Fatalf("%s: the API server without the rule refused the edit: %v", edit.name, err)
		}
		if v.Generation != editedGeneration || v.Spec != edit.spec {
			t.Fatalf("%s: the edit was not stored: generation %d, spec %+v", edit.name, v.Generation, v.Spec)
		}
		var reverted *metav1.Condition
		must(t, eventually(ctx, edit.name+" reverted", func(ctx context.Context) error {
			if err := b.c.Get(ctx, client.ObjectKeyFromObject(v), v); err != nil {
				return err
			}
			if v.Spec != original {
				return fmt.Errorf("spec %+v", v.Spec)
			}
			reverted = meta.FindStatusCondition(v.Status.Conditions, controller.ConditionSpecReverted)
			if reverted == nil || reverted.ObservedGeneration != v.Generation {
				return fmt.Errorf("SpecReverted condition %+v at generation %d", reverted, v.Generation)
			}
			return nil
		}))
		if v.Generation <= editedGeneration {
			t.Errorf("%s: generation %d after the revert, want more than the edit's %d", edit.name, v.Generation, editedGeneration)
		}
		if reverted.Status != metav1.ConditionTrue || reverted.Reason != controller.ReasonSpecEdited {
			t.Errorf("%s: SpecReverted condition %+v", edit.name, reverted)
		}
		for _, w := range append(edit.want, "PersistentVolume pv-team-a-data mounts fs-0123cdef::fsap-0123456789abcdef", "Create a new SharedVolume") {
			if !strings.Contains(reverted.Message, w) {
				t.Errorf("%s: condition message %q lacks %q", edit.name, reverted.Message, w)
			}
		}
		must(t, eventually(ctx, edit.name+" event", b.eventWith(v, controller.ReasonSpecEdited, edit.want[0])))
		// Still Ready, for the reverted spec's generation.
		ready := meta.FindStatusCondition(v.Status.Conditions, controller.ConditionReady)
		if v.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady || ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != v.Generation {
			t.Errorf("%s: phase %q, Ready %+v at generation %d", edit.name, v.Status.Phase, ready, v.Generation)
		}
	}
	b.assertUnchanged(ctx, pv, pvc)
}

// TestRevertRefusedByTheAPIServerFailsWithoutRepointing: a spec edited while nothing enforced
// the rule (the community operator's CRD, and no operator running) can no longer be reverted
// once the CRD with the rule is installed, since the API server refuses any spec change. The
// controller then reports the mismatch as Failed, without looping and without re-pointing the PV.
func TestRevertRefusedByTheAPIServerFailsWithoutRepointing(t *testing.T) {
	shipped := shippedCRD(t)
	b := newBedWith(t, testutil.WithoutValidationRules(shipped))
	stop := b.run()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b.namespace(ctx, "team-a", nil)
	v := sv("team-a", "data", "fs-0123cdef", "fsap-0123456789abcdef")
	must(t, b.c.Create(ctx, v))
	must(t, eventually(ctx, "Ready", b.phase(v, sharedvolumev1alpha1.SharedVolumeReady)))
	stop()

	v.Spec.FileSystemID = "fs-99999999"
	must(t, b.c.Update(ctx, v))
	pv := &corev1.PersistentVolume{}
	pvc := &corev1.PersistentVolumeClaim{}
	must(t, b.c.Get(ctx, client.ObjectKey{Name: "pv-team-a-data"}, pv))
	must(t, b.c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "pvc-data"}, pvc))
	must(t, testbed.InstallCRDs(ctx, b.c, shipped))
	must(t, eventually(ctx, "the API server to enforce the rule", func(ctx context.Context) error {
		probe := v.DeepCopy()
		probe.Spec.FileSystemID = "fs-0123cdef"
		if err := b.c.Update(ctx, probe, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
			return fmt.Errorf("a dry-run spec change: %v", err)
		}
		return nil
	}))

	b.run()
	must(t, eventually(ctx, "Failed", b.phase(v, sharedvolumev1alpha1.SharedVolumeFailed)))
	for _, w := range []string{"PersistentVolume pv-team-a-data mounts fs-0123cdef::fsap-0123456789abcdef, not fs-99999999::fsap-0123456789abcdef", "could not be reverted", "delete this SharedVolume"} {
		if !strings.Contains(v.Status.Message, w) {
			t.Errorf("message %q lacks %q", v.Status.Message, w)
		}
	}
	if c := meta.FindStatusCondition(v.Status.Conditions, controller.ConditionReady); c == nil || c.Reason != controller.ReasonMismatch || c.ObservedGeneration != v.Generation {
		t.Errorf("Ready condition %+v at generation %d", c, v.Generation)
	}
	if c := meta.FindStatusCondition(v.Status.Conditions, controller.ConditionSpecReverted); c != nil {
		t.Errorf("SpecReverted condition %+v, but nothing was reverted", c)
	}
	// Settled: the refused revert is no error to retry, and nothing changes any more.
	rv := v.ResourceVersion
	errorsBefore, err := metricstestutil.GetCounterMetricValue(controller.ReconcileErrors)
	must(t, err)
	time.Sleep(3 * time.Second)
	must(t, b.c.Get(ctx, client.ObjectKeyFromObject(v), v))
	if v.ResourceVersion != rv || v.Spec.FileSystemID != "fs-99999999" {
		t.Errorf("the SharedVolume kept changing: resourceVersion %s (was %s), spec %+v", v.ResourceVersion, rv, v.Spec)
	}
	if errorsAfter, err := metricstestutil.GetCounterMetricValue(controller.ReconcileErrors); err != nil || errorsAfter != errorsBefore {
		t.Errorf("reconcile errors went from %v to %v (%v): the controller retries", errorsBefore, errorsAfter, err)
	}
	b.assertUnchanged(ctx, pv, pvc)
}

// eventWith checks that an event with this reason and a message containing text was recorded
// about obj.
func (b *bed) eventWith(obj client.Object, reason, text string) func(context.Context) error {
	return func(ctx context.Context) error {
		var events corev1.EventList
		if err := b.c.List(ctx, &events, client.InNamespace(obj.GetNamespace())); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == obj.GetName() && e.Reason == reason && strings.Contains(e.Message, text) {
				if e.Type != corev1.EventTypeWarning {
					return fmt.Errorf("%s event of type %s", reason, e.Type)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s event about %s mentioning %q among %d", reason, obj.GetName(), text, len(events.Items))
	}
}

// assertUnchanged checks that a PV and a PVC are the very objects read before, unmodified.
func (b *bed) assertUnchanged(ctx context.Context, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) {
	b.t.Helper()
	for _, before := range []client.Object{pv, pvc} {
		now := before.DeepCopyObject().(client.Object)
		must(b.t, b.c.Get(ctx, client.ObjectKeyFromObject(before), now))
		if now.GetUID() != before.GetUID() || now.GetResourceVersion() != before.GetResourceVersion() {
			b.t.Errorf("%T %s changed: %s@%s, was %s@%s", before, before.GetName(), now.GetUID(), now.GetResourceVersion(), before.GetUID(), before.GetResourceVersion())
		}
	}
	if got := pv.Spec.CSI.VolumeHandle; got != "fs-0123cdef::fsap-0123456789abcdef" {
		b.t.Errorf("PV volumeHandle %s", got)
	}
}
