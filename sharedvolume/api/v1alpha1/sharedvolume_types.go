package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind is the SharedVolume kind name.
const Kind = "SharedVolume"

// SharedVolume asks for a PersistentVolume and a PersistentVolumeClaim, in the SharedVolume's
// namespace, that mount one access point of an AWS EFS file system. App teams use it to get
// shared storage without the right to create PersistentVolumes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=sharedvolumes,scope=Namespaced,shortName=sv
// +kubebuilder:printcolumn:name="File System",type=string,JSONPath=`.spec.fileSystemID`
// +kubebuilder:printcolumn:name="Access Point",type=string,JSONPath=`.spec.accessPointID`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.status.claimRef.name`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`
// +kubebuilder:metadata:annotations="kube-compat.csi-olm.io/self.spec=Kubernetes older than 1.25 ignores the rule that the spec is immutable: there the SharedVolume controller puts an edited spec back from the PersistentVolume it made, which it never re-points, and reports it in an event and the SpecReverted condition."
type SharedVolume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   SharedVolumeSpec   `json:"spec"`
	Status SharedVolumeStatus `json:"status,omitempty"`
}

// SharedVolumeSpec names the EFS file system and access point to mount. Both fields are
// immutable, as the community operator documented: the API server refuses an edit (Kubernetes
// 1.25 and later), and the SharedVolume controller reverts one that an older API server let
// through, from the PersistentVolume it made.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create a new SharedVolume to use another file system or access point"
type SharedVolumeSpec struct {
	// The ID of an EFS volume access point, e.g. `fsap-0123456789abcdef`. The EFS volume will be
	// mounted to the specified access point. Required. Immutable.
	// +kubebuilder:validation:Pattern=`^fsap-[0-9a-f]+$`
	// +kubebuilder:validation:MaxLength=64
	// +required
	AccessPointID string `json:"accessPointID"`

	// The ID of the EFS volume, e.g. `fs-0123cdef`. Required. Immutable.
	// +kubebuilder:validation:Pattern=`^fs-[0-9a-f]+$`
	// +kubebuilder:validation:MaxLength=64
	// +required
	FileSystemID string `json:"fileSystemID"`
}

// SharedVolumePhase is the state of the PersistentVolume and PersistentVolumeClaim of a SharedVolume.
// +kubebuilder:validation:Enum=Pending;Ready;Deleting;Failed
type SharedVolumePhase string

const (
	// SharedVolumePending means the PV and PVC are being created or are not bound yet.
	SharedVolumePending SharedVolumePhase = "Pending"
	// SharedVolumeReady means the PVC is bound to the PV and can be mounted.
	SharedVolumeReady SharedVolumePhase = "Ready"
	// SharedVolumeDeleting means the PVC and PV are being removed.
	SharedVolumeDeleting SharedVolumePhase = "Deleting"
	// SharedVolumeFailed means the PV or PVC could not be set up; Message says why.
	SharedVolumeFailed SharedVolumePhase = "Failed"
)

// SharedVolumeStatus is the observed state of a SharedVolume.
type SharedVolumeStatus struct {
	// Phase indicates the state of the PersistentVolume and PersistentVolumeClaim artifacts
	// associated with this SharedVolume.
	// +optional
	Phase SharedVolumePhase `json:"phase,omitempty"`

	// Message is a human-readable string, usually describing what went wrong when Phase is Failed.
	// +optional
	Message string `json:"message,omitempty"`

	// ClaimRef refers to the PersistentVolumeClaim bound to the PersistentVolume representing the
	// file system access point, both of which are created at the behest of this SharedVolume.
	// +optional
	ClaimRef *corev1.TypedLocalObjectReference `json:"claimRef,omitempty"`

	// Conditions are the latest observations of the SharedVolume's state.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SharedVolumeList is a list of SharedVolumes.
//
// +kubebuilder:object:root=true
type SharedVolumeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SharedVolume `json:"items"`
}
