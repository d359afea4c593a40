// Package v1alpha1 is the operator's own API: the RemovalFence, the parameter of the
// ValidatingAdmissionPolicy that refuses new uses of EFS volumes for the seconds in which the
// driver is removed. Only the operator writes RemovalFences, in its own namespace.
//
// +kubebuilder:object:generate=true
// +groupName=aws-efs.csi-olm.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of RemovalFence.
var GroupVersion = schema.GroupVersion{Group: "aws-efs.csi-olm.io", Version: "v1alpha1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers RemovalFence with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &RemovalFence{}, &RemovalFenceList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
