package volumes

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// TestRecordedSpec reads the spec back from every form of PV a SharedVolume was given, and from
// nothing else: a spec is only ever reverted to what a PV records without doubt.
func TestRecordedSpec(t *testing.T) {
	pv := func(driver, handle string, options ...string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{
			MountOptions: options,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: handle,
			}},
		}}
	}
	spec := sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-01", AccessPointID: "fsap-01"}
	for _, tt := range []struct {
		name string
		pv   *corev1.PersistentVolume
		ok   bool
	}{
		{"current form", pv("efs.csi.aws.com", "fs-01::fsap-01"), true},
		{"community's older form", pv("efs.csi.aws.com", "fs-01", "tls", "accesspoint=fsap-01"), true},
		{"older form, access point repeated", pv("efs.csi.aws.com", "fs-01", "accesspoint=fsap-01", "tls", "accesspoint=fsap-01"), true},
		{"older form, two access points", pv("efs.csi.aws.com", "fs-01", "accesspoint=fsap-01", "accesspoint=fsap-02"), false},
		{"older form without access point", pv("efs.csi.aws.com", "fs-01", "tls"), false},
		{"older form with an empty access point", pv("efs.csi.aws.com", "fs-01", "accesspoint="), false},
		{"a subpath", pv("efs.csi.aws.com", "fs-01:/data:fsap-01"), false},
		{"no access point", pv("efs.csi.aws.com", "fs-01::"), false},
		{"no file system", pv("efs.csi.aws.com", "::fsap-01"), false},
		{"two parts", pv("efs.csi.aws.com", "fs-01:fsap-01"), false},
		{"empty handle", pv("efs.csi.aws.com", ""), false},
		{"another driver", pv("other.csi.example.com", "fs-01::fsap-01"), false},
		{"no CSI source", &corev1.PersistentVolume{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RecordedSpec(tt.pv)
			if ok != tt.ok || (ok && got != spec) {
				t.Errorf("RecordedSpec = %+v, %v; want %+v, %v", got, ok, spec, tt.ok)
			}
		})
	}
}

func TestSpecEdits(t *testing.T) {
	recorded := sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-01", AccessPointID: "fsap-01"}
	for _, tt := range []struct {
		spec sharedvolumev1alpha1.SharedVolumeSpec
		want []string
	}{
		{recorded, nil},
		{sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-02", AccessPointID: "fsap-01"}, []string{"spec.fileSystemID from fs-01 to fs-02"}},
		{sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-02", AccessPointID: "fsap-02"}, []string{"spec.fileSystemID from fs-01 to fs-02", "spec.accessPointID from fsap-01 to fsap-02"}},
	} {
		if got := SpecEdits(recorded, tt.spec); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SpecEdits(%+v) = %q, want %q", tt.spec, got, tt.want)
		}
	}
}
