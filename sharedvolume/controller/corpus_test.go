package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/test/clustercorpus"
)

// TestSharedVolumeCorpus runs the SharedVolume cases of the bad-input corpus
// (test/badinput/README.md) against the controller and a real API server with the shipped CRD:
// malformed SharedVolumes the API server refuses, SharedVolumes the controller refuses, and hand
// edits of what it made, each in its own namespace of one test bed.
func TestSharedVolumeCorpus(t *testing.T) {
	b := newBed(t)
	b.run()
	example, err := clustercorpus.ShippedExample("../..", "aws-efs-operator", sharedvolumev1alpha1.Kind)
	must(t, err)
	clustercorpus.Run(t, "../../test/badinput/sharedvolume", "sv-", &svSurface{c: b.c, example: example}, clustercorpus.Options{
		Client: b.c, Example: example, Timeout: time.Minute,
	})
	if n, err := clustercorpus.ReconcilePanics(); err != nil || n > 0 {
		t.Errorf("the controller panicked %v times (%v)", n, err)
	}
}

// svSurface knows a SharedVolume case's objects: its SharedVolume (sv, the case's subject), the
// PersistentVolume and claim named for it (pv, pvc), and its namespace.
type svSurface struct {
	c       client.Client
	example map[string]any
}

func (s *svSurface) subject(c *clustercorpus.Case, ns string) *sharedvolumev1alpha1.SharedVolume {
	v := &sharedvolumev1alpha1.SharedVolume{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}
	if obj := c.Subject(s.example); obj != nil {
		u := unstructured.Unstructured{Object: obj}
		v.Name = u.GetName()
	}
	return v
}

func (s *svSurface) Aliases(c *clustercorpus.Case, ns string) map[string]clustercorpus.Ref {
	v := s.subject(c, ns)
	return map[string]clustercorpus.Ref{
		"sv":        {GVK: clustercorpus.Kind("SharedVolume"), Namespace: ns, Name: v.Name},
		"pv":        {GVK: clustercorpus.Kind("PersistentVolume"), Name: efs.SharedVolumePV(ns, v.Name)},
		"pvc":       {GVK: clustercorpus.Kind("PersistentVolumeClaim"), Namespace: ns, Name: efs.SharedVolumePVC(v.Name)},
		"namespace": {GVK: clustercorpus.Kind("Namespace"), Name: ns},
	}
}

func (s *svSurface) Ready(ctx context.Context, c *clustercorpus.Case, ns string) error {
	v := s.subject(c, ns)
	return eventually(ctx, "Ready", func(ctx context.Context) error {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(v), v); err != nil {
			return err
		}
		if v.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady {
			return fmt.Errorf("phase %q message %q", v.Status.Phase, v.Status.Message)
		}
		return nil
	})
}

func (s *svSurface) Said(ctx context.Context, c *clustercorpus.Case, ns string, since time.Time) (string, string, error) {
	v := s.subject(c, ns)
	status := ""
	switch err := s.c.Get(ctx, client.ObjectKeyFromObject(v), v); {
	case err == nil:
		status = fmt.Sprintf("phase %s: %s\n%s", v.Status.Phase, v.Status.Message, clustercorpus.MetaConditions(v.Status.Conditions))
	case !apierrors.IsNotFound(err):
		return "", "", err
	}
	events, err := clustercorpus.Events(ctx, s.c, ns, since, func(o corev1.ObjectReference) bool {
		return o.Kind == sharedvolumev1alpha1.Kind && o.Name == v.Name
	})
	return status, events, err
}

// Scope is every SharedVolume and claim of the case's namespace, and every PersistentVolume
// named for it, labelled as one of its SharedVolumes' or bound to one of its claims.
func (s *svSurface) Scope(ctx context.Context, ns string) ([]*unstructured.Unstructured, error) {
	var scope []*unstructured.Unstructured
	for _, kind := range []string{"SharedVolume", "PersistentVolumeClaim"} {
		objs, err := clustercorpus.List(ctx, s.c, clustercorpus.Kind(kind), ns)
		if err != nil {
			return nil, err
		}
		scope = append(scope, objs...)
	}
	pvs, err := clustercorpus.List(ctx, s.c, clustercorpus.Kind("PersistentVolume"), "")
	if err != nil {
		return nil, err
	}
	for _, pv := range pvs {
		claimNS, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace")
		if strings.HasPrefix(pv.GetName(), efs.SharedVolumePV(ns, "")) || pv.GetLabels()[efs.SharedVolumeOwnerNamespaceLabel] == ns || claimNS == ns {
			scope = append(scope, pv)
		}
	}
	return scope, nil
}

// Check: a SharedVolume Ready at the end of a case has its own PV and claim, bound to each other,
// recording its spec, kept with Retain.
func (s *svSurface) Check(ctx context.Context, c *clustercorpus.Case, ns string) []string {
	v := s.subject(c, ns)
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(v), v); err != nil || v.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady {
		return nil
	}
	var pv corev1.PersistentVolume
	var pvc corev1.PersistentVolumeClaim
	if err := s.c.Get(ctx, client.ObjectKey{Name: efs.SharedVolumePV(ns, v.Name)}, &pv); err != nil {
		return []string{fmt.Sprintf("Ready, but its PersistentVolume: %v", err)}
	}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efs.SharedVolumePVC(v.Name)}, &pvc); err != nil {
		return []string{fmt.Sprintf("Ready, but its claim: %v", err)}
	}
	var problems []string
	for _, tt := range []struct {
		what      string
		got, want any
	}{
		{"the claim's phase", pvc.Status.Phase, corev1.ClaimBound},
		{"the claim's volume", pvc.Spec.VolumeName, pv.Name},
		{"the PV's claimRef", claimRefOf(&pv), fmt.Sprintf("%s/%s %s", ns, pvc.Name, pvc.UID)},
		{"the PV's volumeHandle", pv.Spec.CSI.VolumeHandle, v.Spec.FileSystemID + "::" + v.Spec.AccessPointID},
		{"the PV's reclaim policy", pv.Spec.PersistentVolumeReclaimPolicy, corev1.PersistentVolumeReclaimRetain},
		{"the PV's owner", pv.Labels[efs.SharedVolumeOwnerNamespaceLabel] + "/" + pv.Labels[efs.SharedVolumeOwnerNameLabel], ns + "/" + v.Name},
		{"the claim's owner", pvc.Labels[efs.SharedVolumeOwnerNamespaceLabel] + "/" + pvc.Labels[efs.SharedVolumeOwnerNameLabel], ns + "/" + v.Name},
	} {
		if fmt.Sprint(tt.got) != fmt.Sprint(tt.want) {
			problems = append(problems, fmt.Sprintf("Ready, but %s is %v, want %v", tt.what, tt.got, tt.want))
		}
	}
	return problems
}

func claimRefOf(pv *corev1.PersistentVolume) string {
	if pv.Spec.ClaimRef == nil {
		return "none"
	}
	return fmt.Sprintf("%s/%s %s", pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, pv.Spec.ClaimRef.UID)
}
