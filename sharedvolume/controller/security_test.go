package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// appTeam returns a client authenticated as a ServiceAccount of namespace ns that may only
// manage SharedVolumes and claims there, as an app team would be set up; RBAC is enforced by the
// real API server.
func (b *bed) appTeam(ctx context.Context, ns string) client.Client {
	b.t.Helper()
	must(b.t, b.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}))
	must(b.t, b.c.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sharedvolume-editor"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{sharedvolumev1alpha1.GroupVersion.Group}, Resources: []string{"sharedvolumes"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		},
	}))
	must(b.t, b.c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-sharedvolume-editor"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "app", Namespace: ns}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "sharedvolume-editor"},
	}))
	c, err := client.New(fixture.ServiceAccountConfig(ctx, b.t, b.stack.Config, ns, "app"), client.Options{Scheme: testbed.Scheme})
	must(b.t, err)
	return c
}

// TestAppTeamCannotReachOthersVolumes: an app team with SharedVolume rights in its namespace
// cannot get a PV for a file system its namespace does not allow, cannot change the allow-list,
// cannot create PVs, and cannot claim a PV bound to another namespace.
func TestAppTeamCannotReachOthersVolumes(t *testing.T) {
	b := newBed(t)
	b.run()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b.namespace(ctx, "team-a", nil)
	b.namespace(ctx, "team-b", map[string]string{volumes.AllowedFileSystemsAnnotation: "fs-0b0b"})
	a, bTeam := b.appTeam(ctx, "team-a"), b.appTeam(ctx, "team-b")

	// Team A's volume.
	va := sv("team-a", "data", "fs-0a0a", "fsap-0a0a")
	must(t, a.Create(ctx, va))
	must(t, eventually(ctx, "team A's volume Ready", b.phase(va, sharedvolumev1alpha1.SharedVolumeReady)))

	// Team B may not use team A's file system.
	vb := sv("team-b", "steal", "fs-0a0a", "fsap-0a0a")
	must(t, bTeam.Create(ctx, vb))
	must(t, eventually(ctx, "team B's volume Failed", b.phase(vb, sharedvolumev1alpha1.SharedVolumeFailed)))
	if !strings.Contains(vb.Status.Message, "file system fs-0a0a is not allowed in namespace team-b") {
		t.Errorf("message %q", vb.Status.Message)
	}
	if err := b.c.Get(ctx, client.ObjectKey{Name: "pv-team-b-steal"}, &corev1.PersistentVolume{}); err == nil {
		t.Error("a PV was created for a file system the namespace does not allow")
	}

	// Team B can neither lift the restriction nor make a PV itself.
	var ns corev1.Namespace
	must(t, b.c.Get(ctx, client.ObjectKey{Name: "team-b"}, &ns))
	ns.Annotations[volumes.AllowedFileSystemsAnnotation] = "fs-0a0a"
	if err := bTeam.Update(ctx, &ns); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("team B changed its allow-list: %v", err)
	}
	if err := bTeam.Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "handmade"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "efs.csi.aws.com", VolumeHandle: "fs-0a0a::fsap-0a0a",
			}},
		},
	}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("team B created a PV: %v", err)
	}

	// Team B's claim for team A's PV never binds: the PV is pre-bound to team A's claim.
	steal := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "grab"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To("efs-sc"),
			VolumeName:       "pv-team-a-data",
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	must(t, bTeam.Create(ctx, steal))
	// The binder has processed the claim once it reports why it cannot bind it.
	must(t, eventually(ctx, "the binder to refuse the claim", b.eventFor(steal, "FailedBinding")))
	must(t, b.c.Get(ctx, client.ObjectKeyFromObject(steal), steal))
	var pv corev1.PersistentVolume
	must(t, b.c.Get(ctx, client.ObjectKey{Name: "pv-team-a-data"}, &pv))
	if steal.Status.Phase == corev1.ClaimBound || pv.Spec.ClaimRef.Namespace != "team-a" {
		t.Errorf("team B's claim reached team A's volume: claim %s, PV claimRef %s/%s", steal.Status.Phase, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	}

	// Allowed file systems work for team B.
	ok := sv("team-b", "own", "fs-0b0b", "fsap-0b0b")
	must(t, bTeam.Create(ctx, ok))
	must(t, eventually(ctx, "team B's allowed volume Ready", b.phase(ok, sharedvolumev1alpha1.SharedVolumeReady)))
}

// TestRestartWhileCreatingConverges stops the controller while 200 SharedVolumes are being
// created and starts it again: every one ends Ready with exactly one PV and one bound PVC.
func TestRestartWhileCreatingConverges(t *testing.T) {
	const n = 200
	b := newBed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	b.namespace(ctx, "many", nil)
	stop := b.run()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- b.c.Create(ctx, sv("many", fmt.Sprintf("v%03d", i), "fs-01", fmt.Sprintf("fsap-%03x", i)))
		}()
		if i == n/2 {
			stop() // mid-way
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	b.run()
	must(t, eventually(ctx, "all Ready", func(ctx context.Context) error {
		var list sharedvolumev1alpha1.SharedVolumeList
		if err := b.c.List(ctx, &list, client.InNamespace("many")); err != nil {
			return err
		}
		ready := 0
		for _, v := range list.Items {
			if v.Status.Phase == sharedvolumev1alpha1.SharedVolumeReady {
				ready++
			}
		}
		if ready != n {
			return fmt.Errorf("%d of %d Ready", ready, n)
		}
		return nil
	}))
	var pvs corev1.PersistentVolumeList
	must(t, b.c.List(ctx, &pvs, client.MatchingLabels{efs.SharedVolumeOwnerNamespaceLabel: "many"}))
	var pvcs corev1.PersistentVolumeClaimList
	must(t, b.c.List(ctx, &pvcs, client.InNamespace("many")))
	if len(pvs.Items) != n || len(pvcs.Items) != n {
		t.Errorf("%d PVs and %d PVCs for %d SharedVolumes", len(pvs.Items), len(pvcs.Items), n)
	}
	for _, pvc := range pvcs.Items {
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Labels[efs.SharedVolumeOwnerNameLabel] == "" {
			t.Errorf("PVC %s: %s, labels %v", pvc.Name, pvc.Status.Phase, pvc.Labels)
		}
	}
}
