package controller

import (
	"maps"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/volumes"
)

// The cache's transforms keep, of each SharedVolume, PV and PVC, what the controller reads, and
// share the strings every one of them repeats (label keys, the driver, the storage class, kinds,
// phases, reasons): decoded, each was an allocation of its own in every cached object, and the
// operator's RSS grows with every SharedVolume (BENCHMARKS.md, the RSS at 10,000). A patch
// computed from a cached copy names only what it changes, so the fields left out are never
// written.

// slimVolume keeps, of a cached PV, its identity, labels and spec: the binder's annotations, the
// finalizer and the status are not read.
func slimVolume(obj any) (any, error) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return obj, nil
	}
	spec := pv.Spec
	spec.StorageClassName = interned(spec.StorageClassName)
	spec.PersistentVolumeReclaimPolicy = interned(spec.PersistentVolumeReclaimPolicy)
	for i, mode := range spec.AccessModes {
		spec.AccessModes[i] = interned(mode)
	}
	if spec.CSI != nil {
		spec.CSI.Driver = interned(spec.CSI.Driver)
	}
	if ref := spec.ClaimRef; ref != nil {
		ref.Kind, ref.APIVersion, ref.Namespace = interned(ref.Kind), interned(ref.APIVersion), interned(ref.Namespace)
	}
	return &corev1.PersistentVolume{ObjectMeta: slimMeta(pv.ObjectMeta), Spec: spec}, nil
}

// slimClaim keeps, of a cached PVC, its identity, its ownership labels, the volume it asks for
// and its phase. Every claim of the cluster is cached, to tell whether a SharedVolume's claim name
// is taken: the labels of others' claims are theirs to have, and would be most of their bytes.
func slimClaim(obj any) (any, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return obj, nil
	}
	// The decoded claim is the transform's own to change; slimMeta copies what is left.
	maps.DeleteFunc(pvc.Labels, func(k, _ string) bool {
		_, ours := ownershipLabels[k]
		return !ours
	})
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: slimMeta(pvc.ObjectMeta),
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pvc.Spec.VolumeName},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: interned(pvc.Status.Phase)},
	}, nil
}

// slimSharedVolume drops a cached SharedVolume's managedFields and shares its repeated strings;
// the rest is read.
func slimSharedVolume(obj any) (any, error) {
	sv, ok := obj.(*sharedvolumev1alpha1.SharedVolume)
	if !ok {
		return obj, nil
	}
	sv.ManagedFields = nil
	sv.Namespace = interned(sv.Namespace)
	for i, f := range sv.Finalizers {
		sv.Finalizers[i] = interned(f)
	}
	sv.Status.Phase = interned(sv.Status.Phase)
	if ref := sv.Status.ClaimRef; ref != nil {
		ref.Kind = interned(ref.Kind)
	}
	for i := range sv.Status.Conditions {
		c := &sv.Status.Conditions[i]
		c.Type, c.Status, c.Reason = interned(c.Type), interned(c.Status), interned(c.Reason)
	}
	return sv, nil
}

// ownershipLabels has, as its keys, the labels that say which SharedVolume an object is.
var ownershipLabels = volumes.OwnerLabels(&sharedvolumev1alpha1.SharedVolume{})

func slimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	var labels map[string]string
	if m.Labels != nil {
		labels = make(map[string]string, len(m.Labels))
	}
	for k, v := range m.Labels {
		// The owner's namespace and "true" repeat. Other values, such as the owner's name, are
		// one object's own: shared, each would stay for the process's life after its object.
		if k == efs.SharedVolumeOwnerNamespaceLabel || k == efs.CommunityOwnedLabel {
			v = interned(v)
		}
		labels[interned(k)] = v
	}
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: interned(m.Namespace), UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: labels,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
}

// sharedStrings holds the one copy of each string the transforms share, for the process's life.
// The package unique is no home for them: it holds its copies only while a unique.Handle is alive,
// and a cached object keeps the string, not the handle, so after a garbage collection the next
// object gets a copy of its own (issue 45's CI run caught it). What is kept here is bounded by the
// cluster's namespaces and the few kinds, phases, reasons and label keys the objects carry.
var sharedStrings sync.Map

// interned returns the one shared copy of s.
func interned[S ~string](s S) S {
	if v, ok := sharedStrings.Load(string(s)); ok {
		return S(v.(string))
	}
	// The clone keeps the decoder's buffer, of which s may be a slice, from being held.
	v, _ := sharedStrings.LoadOrStore(string(s), strings.Clone(string(s)))
	return S(v.(string))
}
