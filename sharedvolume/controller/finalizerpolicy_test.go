package controller_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/names/olm"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/controller"
)

// TestFinalizerPolicy checks that the controller puts up the finalizer policy, and that the API
// server then gives new SharedVolumes the finalizer as it admits them, keeping any other, only
// while OLM's ClusterRole for the operator's CSV exists.
func TestFinalizerPolicy(t *testing.T) {
	b := newBed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const operatorNS, csv = "operator", "aws-efs-csi-driver-operator.v4.11.0"
	b.namespace(ctx, operatorNS, nil)
	b.namespace(ctx, "team", nil)
	b.runWith(controller.Options{Workers: 1, OperatorNamespace: operatorNS, CSV: csv})
	for _, obj := range []client.Object{
		&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: efs.SharedVolumeFinalizerPolicy}},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: efs.SharedVolumeFinalizerPolicy}},
	} {
		must(t, eventually(ctx, fmt.Sprintf("%T %s", obj, obj.GetName()), func(ctx context.Context) error {
			return b.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		}))
	}

	// admitted returns the finalizers the API server gives a new SharedVolume that asks for
	// these: a dry run goes through admission and stores nothing.
	admitted := func(ctx context.Context, finalizers ...string) ([]string, error) {
		s := sv("team", "probe", "fs-01", "fsap-01")
		s.Finalizers = finalizers
		if err := b.c.Create(ctx, s, client.DryRunAll); err != nil {
			return nil, err
		}
		return s.Finalizers, nil
	}
	expect := func(what string, ask, want []string) {
		t.Helper()
		must(t, eventually(ctx, what, func(ctx context.Context) error {
			got, err := admitted(ctx, ask...)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("a SharedVolume created with finalizers %q is admitted with %q, want %q", ask, got, want)
			}
			return nil
		}))
	}

	// OLM's ClusterRole for the CSV, and two that are not it: another CSV's in the same
	// namespace, and one of a CSV of the same name in another namespace.
	clusterRole := func(name, csv, namespace string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: olm.OwnerLabels(csv, namespace)}}
	}
	must(t, b.c.Create(ctx, clusterRole("other-csv", "aws-efs-csi-driver-operator.v4.10.0", operatorNS)))
	must(t, b.c.Create(ctx, clusterRole("other-namespace", csv, "elsewhere")))
	// Wait long enough for the API server to have loaded the policy before asserting an absence.
	time.Sleep(3 * time.Second)
	expect("no finalizer without OLM's ClusterRole for the CSV", nil, nil)

	installed := clusterRole(csv+"-abc123", csv, operatorNS)
	must(t, b.c.Create(ctx, installed))
	expect("the finalizer while the CSV is installed", nil, []string{efs.SharedVolumeFinalizer})
	expect("another finalizer kept", []string{"example.com/keep"}, []string{"example.com/keep", efs.SharedVolumeFinalizer})
	expect("the finalizer not doubled", []string{efs.SharedVolumeFinalizer}, []string{efs.SharedVolumeFinalizer})

	// A SharedVolume made with the policy's finalizer becomes Ready with no write of the
	// controller's but to its status.
	s := sv("team", "stored", "fs-01", "fsap-02")
	must(t, b.c.Create(ctx, s))
	must(t, eventually(ctx, "Ready", b.phase(s, sharedvolumev1alpha1.SharedVolumeReady)))
	if !slices.Equal(s.Finalizers, []string{efs.SharedVolumeFinalizer}) {
		t.Errorf("Ready SharedVolume has finalizers %q", s.Finalizers)
	}
	for _, m := range s.ManagedFields {
		if m.Manager == controller.FieldManager && m.Subresource == "" {
			t.Errorf("the controller wrote the SharedVolume itself, not only its status: %+v", m)
		}
	}

	must(t, b.c.Delete(ctx, installed))
	expect("no finalizer once OLM removed the CSV's ClusterRole", nil, nil)
}
