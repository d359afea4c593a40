// Package v1alpha1 is the SharedVolume API of the community aws-efs-operator, kept field for field
// so that SharedVolumes, PVs and PVCs created before the upgrade keep working after it.
//
// +kubebuilder:object:generate=true
// +groupName=aws-efs.managed.openshift.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of SharedVolume.
var GroupVersion = schema.GroupVersion{Group: "aws-efs.managed.openshift.io", Version: "v1alpha1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers SharedVolume with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &SharedVolume{}, &SharedVolumeList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
