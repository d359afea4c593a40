// Package volumes maps a SharedVolume to its PersistentVolume for an EFS access point and its
// PersistentVolumeClaim in the SharedVolume's namespace, pre-bound to each other, and reads a
// SharedVolume's spec back from a volume. It is kept apart from the controller, with nothing but
// the API types below it, so that fuzzing it compiles only what it uses.
package volumes

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// Namespace annotations a cluster admin sets to restrict what SharedVolumes may mount: a comma
// separated list of file system IDs, and optionally of access point IDs. Without them every file
// system is allowed, as with the community operator.
const (
	AllowedFileSystemsAnnotation  = "aws-efs.managed.openshift.io/allowed-file-systems"
	AllowedAccessPointsAnnotation = "aws-efs.managed.openshift.io/allowed-access-points"
)

// Size is the capacity of every SharedVolume's PV and PVC: EFS has no size, the API needs one.
var Size = resource.MustParse("1Gi")

// PVName is the PersistentVolume of a SharedVolume.
func PVName(sv *sharedvolumev1alpha1.SharedVolume) string {
	return efs.SharedVolumePV(sv.Namespace, sv.Name)
}

// PVCName is the PersistentVolumeClaim of a SharedVolume, in its namespace.
func PVCName(sv *sharedvolumev1alpha1.SharedVolume) string { return efs.SharedVolumePVC(sv.Name) }

// NameProblem says why a SharedVolume's name cannot make its PV and PVC, which the API server
// would refuse: the name is a label value on both (at most 63 characters, which the community
// operator's API did not say), and the PV's name joins it with the namespace's.
func NameProblem(sv *sharedvolumev1alpha1.SharedVolume) string {
	if errs := validation.IsValidLabelValue(sv.Name); len(errs) > 0 {
		return fmt.Sprintf("the name %s cannot label its PersistentVolume and claim (%s): create a SharedVolume with a name of at most %d characters",
			sv.Name, strings.Join(errs, "; "), validation.LabelValueMaxLength)
	}
	for _, name := range []string{PVName(sv), PVCName(sv)} {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Sprintf("the name %s cannot name its volume %s (%s): create a SharedVolume with a shorter name", sv.Name, name, strings.Join(errs, "; "))
		}
	}
	return ""
}

// OwnerLabels are the labels that mark a PV or PVC as a SharedVolume's own.
func OwnerLabels(sv *sharedvolumev1alpha1.SharedVolume) map[string]string {
	return map[string]string{efs.SharedVolumeOwnerNamespaceLabel: sv.Namespace, efs.SharedVolumeOwnerNameLabel: sv.Name, efs.CommunityOwnedLabel: "true"}
}

// OwnedBy reports whether an object carries the ownership labels of this SharedVolume.
func OwnedBy(obj metav1.Object, sv *sharedvolumev1alpha1.SharedVolume) bool {
	l := obj.GetLabels()
	return l[efs.SharedVolumeOwnerNamespaceLabel] == sv.Namespace && l[efs.SharedVolumeOwnerNameLabel] == sv.Name
}

// owner describes who an object belongs to, for collision messages.
func Owner(obj metav1.Object) string {
	l := obj.GetLabels()
	if l[efs.SharedVolumeOwnerNamespaceLabel] != "" {
		return fmt.Sprintf("SharedVolume %s/%s", l[efs.SharedVolumeOwnerNamespaceLabel], l[efs.SharedVolumeOwnerNameLabel])
	}
	return "no SharedVolume"
}

// PV is the PersistentVolume a SharedVolume asks for, reserved for its claim.
func PV(sv *sharedvolumev1alpha1.SharedVolume) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: PVName(sv), Labels: OwnerLabels(sv)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: Size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			VolumeMode:                    ptr.To(corev1.PersistentVolumeFilesystem),
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              efs.StorageClass,
			// Pre-bound: only the SharedVolume's own claim can ever bind this volume.
			ClaimRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: sv.Namespace, Name: PVCName(sv)},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:       efs.DriverName,
				VolumeHandle: sv.Spec.FileSystemID + "::" + sv.Spec.AccessPointID,
			}},
		},
	}
}

// PVC is the PersistentVolumeClaim a SharedVolume asks for, naming its volume.
func PVC(sv *sharedvolumev1alpha1.SharedVolume) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: sv.Namespace, Name: PVCName(sv), Labels: OwnerLabels(sv)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To(efs.StorageClass),
			VolumeName:       PVName(sv),
			VolumeMode:       ptr.To(corev1.PersistentVolumeFilesystem),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: Size}},
		},
	}
}

// RecordedSpec reads back, from a PV made for a SharedVolume, the spec it was made from: the
// current form (volumeHandle <fs>::<fsap>) or the community operator's older one (volumeHandle
// <fs> with mount options tls and accesspoint=<fsap>). It reports false for any other volume,
// whose spec no SharedVolume could have asked for.
func RecordedSpec(pv *corev1.PersistentVolume) (sharedvolumev1alpha1.SharedVolumeSpec, bool) {
	csi := pv.Spec.CSI
	if csi == nil || csi.Driver != efs.DriverName {
		return sharedvolumev1alpha1.SharedVolumeSpec{}, false
	}
	parts := strings.Split(csi.VolumeHandle, ":")
	switch {
	case len(parts) == 3 && parts[0] != "" && parts[1] == "" && parts[2] != "":
		return sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: parts[0], AccessPointID: parts[2]}, true
	case len(parts) == 1 && parts[0] != "":
		var fsap string
		for _, opt := range pv.Spec.MountOptions {
			if ap, ok := strings.CutPrefix(opt, "accesspoint="); ok {
				if ap == "" || (fsap != "" && ap != fsap) {
					return sharedvolumev1alpha1.SharedVolumeSpec{}, false
				}
				fsap = ap
			}
		}
		return sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: parts[0], AccessPointID: fsap}, fsap != ""
	}
	return sharedvolumev1alpha1.SharedVolumeSpec{}, false
}

// MountsSameAccessPoint reports whether an existing PV mounts the SharedVolume's access point.
func MountsSameAccessPoint(pv *corev1.PersistentVolume, sv *sharedvolumev1alpha1.SharedVolume) bool {
	recorded, ok := RecordedSpec(pv)
	return ok && recorded == sv.Spec
}

// SpecEdits describes how a spec differs from the one a PV records, field by field, from the
// recorded value to the edited one: "spec.fileSystemID from fs-01 to fs-02".
func SpecEdits(recorded, spec sharedvolumev1alpha1.SharedVolumeSpec) []string {
	var edits []string
	for _, f := range []struct{ field, was, now string }{
		{"spec.fileSystemID", recorded.FileSystemID, spec.FileSystemID},
		{"spec.accessPointID", recorded.AccessPointID, spec.AccessPointID},
	} {
		if f.was != f.now {
			edits = append(edits, fmt.Sprintf("%s from %s to %s", f.field, f.was, f.now))
		}
	}
	return edits
}

// allowed checks a SharedVolume against its namespace's allow-list, and says why not.
func Allowed(ns *corev1.Namespace, sv *sharedvolumev1alpha1.SharedVolume) (bool, string) {
	for _, rule := range []struct{ annotation, id, what string }{
		{AllowedFileSystemsAnnotation, sv.Spec.FileSystemID, "file system"},
		{AllowedAccessPointsAnnotation, sv.Spec.AccessPointID, "access point"},
	} {
		list, ok := ns.Annotations[rule.annotation]
		if !ok {
			continue
		}
		var ids []string
		for _, id := range strings.Split(list, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
		if !slices.Contains(ids, rule.id) {
			return false, fmt.Sprintf("%s %s is not allowed in namespace %s (annotation %s allows %v); ask a cluster admin", rule.what, rule.id, ns.Name, rule.annotation, ids)
		}
	}
	return true, ""
}
