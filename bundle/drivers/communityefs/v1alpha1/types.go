// Package v1alpha1 reproduces the SharedVolume API exactly as the community aws-efs-operator
// (v0.0.6 - v0.0.8) shipped it: no immutability rule, no conditions. The community bundles carry
// this CRD so that an upgrade to the supported operator exercises the real CRD upgrade that
// clusters in the field go through. The supported API is sharedvolume/api/v1alpha1.
//
// +kubebuilder:object:generate=true
// +groupName=aws-efs.managed.openshift.io
package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SharedVolume is the Schema for the sharedvolumes API
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=sharedvolumes,scope=Namespaced,shortName=sv
// +kubebuilder:printcolumn:name="File System",type=string,JSONPath=`.spec.fileSystemID`
// +kubebuilder:printcolumn:name="Access Point",type=string,JSONPath=`.spec.accessPointID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.status.claimRef.name`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`
// +kubebuilder:metadata:annotations="kube-compat.csi-olm.io/self.status.claimRef=Kubernetes older than 1.17 ignores that claimRef is atomic, which only server-side apply reads; the community operator writes status with updates, which replace claimRef whole either way. (The field CRD, apiextensions.k8s.io/v1beta1, had no x-kubernetes-map-type; controller-gen takes it from corev1.TypedLocalObjectReference.)"
type SharedVolume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SharedVolumeSpec   `json:"spec,omitempty"`
	Status SharedVolumeStatus `json:"status,omitempty"`
}

// SharedVolumeSpec defines the desired state of SharedVolume
type SharedVolumeSpec struct {
	// The ID of an EFS volume access point, e.g. `fsap-0123456789abcdef`. The EFS volume will be
	// mounted to the specified access point. Required. Immutable.
	// +kubebuilder:validation:Pattern=`^fsap-[0-9a-f]+$`
	AccessPointID string `json:"accessPointID"`
	// The ID of the EFS volume, e.g. `fs-0123cdef`. Required. Immutable.
	// +kubebuilder:validation:Pattern=`^fs-[0-9a-f]+$`
	FileSystemID string `json:"fileSystemID"`
}

// SharedVolumeStatus defines the observed state of SharedVolume
type SharedVolumeStatus struct {
	// Phase indicates the state of the PersistentVolume and PersistentVolumeClaim artifacts
	// associated with this SharedVolume. See SharedVolumePhase consts for possible values.
	Phase string `json:"phase,omitempty"`
	// Message is a human-readable string, usually describing what went wrong when `Phase` is
	// `SharedVolumeFailed`.
	Message string `json:"message,omitempty"`
	// ClaimRef refers to the PersistentVolumeClaim bound to a PersistentVolume representing the
	// file system access point, both of which are created at the behest of this SharedVolume.
	ClaimRef corev1.TypedLocalObjectReference `json:"claimRef,omitempty"`
}
