package controller

import (
	"encoding/json"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
)

// decoded round-trips obj through JSON into out, as the cache's decoder hands it over: every
// string an allocation of its own.
func decoded[T any](t *testing.T, obj any, out T) T {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameData(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestCacheTransforms: the cached PV, PVC and SharedVolume keep every field the controller reads
// and share their repeated strings between objects.
func TestCacheTransforms(t *testing.T) {
	svs := []*sharedvolumev1alpha1.SharedVolume{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a", Finalizers: []string{"f"}}, Spec: sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-1", AccessPointID: "fsap-1"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "b", Finalizers: []string{"f"}}, Spec: sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-1", AccessPointID: "fsap-2"}},
	}
	var pvs []*corev1.PersistentVolume
	var pvcs []*corev1.PersistentVolumeClaim
	var cachedSVs []*sharedvolumev1alpha1.SharedVolume
	for _, sv := range svs {
		// A collection between two objects' transforms is what made sharing fail in CI.
		runtime.GC()
		pv := volumes.PV(sv)
		pv.UID, pv.Annotations, pv.Status.Phase = types.UID("uid-"+pv.Name), map[string]string{"pv.kubernetes.io/bound-by-controller": "yes"}, corev1.VolumeBound
		pv.Spec.ClaimRef.UID = "claim-uid"
		in := decoded(t, pv, &corev1.PersistentVolume{})
		out, err := slimVolume(in)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.PersistentVolume)
		if got.Annotations != nil || got.Status.Phase != "" {
			t.Errorf("PV %s kept what is not read: annotations %v, phase %q", got.Name, got.Annotations, got.Status.Phase)
		}
		if got.Name != pv.Name || got.UID != pv.UID || !equality.Semantic.DeepEqual(got.Labels, pv.Labels) || !equality.Semantic.DeepEqual(got.Spec, pv.Spec) {
			t.Errorf("PV %s lost what is read:\n got %+v\nwant %+v", pv.Name, got, pv)
		}
		pvs = append(pvs, got)

		pvc := volumes.PVC(sv)
		pvc.UID, pvc.Status.Phase = types.UID("uid-"+pvc.Name), corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: volumes.Size}
		in2 := decoded(t, pvc, &corev1.PersistentVolumeClaim{})
		out2, err := slimClaim(in2)
		if err != nil {
			t.Fatal(err)
		}
		gotPVC := out2.(*corev1.PersistentVolumeClaim)
		if gotPVC.Status.Capacity != nil || gotPVC.Spec.StorageClassName != nil {
			t.Errorf("PVC %s kept what is not read: %+v", gotPVC.Name, gotPVC)
		}
		if gotPVC.Name != pvc.Name || gotPVC.Namespace != pvc.Namespace || gotPVC.UID != pvc.UID || gotPVC.Spec.VolumeName != pvc.Spec.VolumeName ||
			gotPVC.Status.Phase != corev1.ClaimBound || !equality.Semantic.DeepEqual(gotPVC.Labels, pvc.Labels) {
			t.Errorf("PVC %s lost what is read: %+v", pvc.Name, gotPVC)
		}
		pvcs = append(pvcs, gotPVC)

		withStatus := sv.DeepCopy()
		withStatus.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
		withStatus.Status = sharedvolumev1alpha1.SharedVolumeStatus{Phase: sharedvolumev1alpha1.SharedVolumeReady}
		setReady(&withStatus.Status, sv, metav1.ConditionTrue, ReasonBound, "bound")
		// What the API server sends, to the second: the transform only drops managedFields.
		want := decoded(t, withStatus, &sharedvolumev1alpha1.SharedVolume{})
		want.ManagedFields = nil
		out3, err := slimSharedVolume(decoded(t, withStatus, &sharedvolumev1alpha1.SharedVolume{}))
		if err != nil {
			t.Fatal(err)
		}
		gotSV := out3.(*sharedvolumev1alpha1.SharedVolume)
		if !equality.Semantic.DeepEqual(gotSV, want) {
			t.Errorf("SharedVolume %s changed:\n got %+v\nwant %+v", sv.Name, gotSV, want)
		}
		cachedSVs = append(cachedSVs, gotSV)
	}
	for key := range pvs[0].Labels {
		for other := range pvs[1].Labels {
			if key == other && !sameData(key, other) {
				t.Errorf("label key %s is not shared between PVs", key)
			}
		}
	}
	for what, pair := range map[string][2]string{
		"driver":         {pvs[0].Spec.CSI.Driver, pvs[1].Spec.CSI.Driver},
		"storage class":  {pvs[0].Spec.StorageClassName, pvs[1].Spec.StorageClassName},
		"claim's kind":   {pvs[0].Spec.ClaimRef.Kind, pvs[1].Spec.ClaimRef.Kind},
		"claim's phase":  {string(pvcs[0].Status.Phase), string(pvcs[1].Status.Phase)},
		"namespace":      {pvcs[0].Namespace, cachedSVs[1].Namespace},
		"finalizer":      {cachedSVs[0].Finalizers[0], cachedSVs[1].Finalizers[0]},
		"condition type": {cachedSVs[0].Status.Conditions[0].Type, cachedSVs[1].Status.Conditions[0].Type},
		"reason":         {cachedSVs[0].Status.Conditions[0].Reason, cachedSVs[1].Status.Conditions[0].Reason},
	} {
		if !sameData(pair[0], pair[1]) {
			t.Errorf("the %s %q is not shared between cached objects", what, pair[0])
		}
	}
}
