package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind is the RemovalFence kind name, and Resource its plural.
const (
	Kind     = "RemovalFence"
	Resource = "removalfences"
)

// RemovalFence is one part of the removal fence's parameter. While a removal of the driver is in
// its last seconds, the operator writes, in its namespace, shards that each hold a part of the
// claims bound to EFS PersistentVolumes, then the head, which holds the revision of them all.
// The fence's policy refuses new pods on a claim any shard holds and, through the head, new EFS
// PersistentVolumes and new bindings of them. Without RemovalFences the policy admits everything:
// the operator deletes them when the removal ends or stops.
//
// Claims are spread over shards because one object cannot hold them all: the API server stores
// an object of at most 1.5 MiB, and a cluster can have 100,000 EFS claims.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=removalfences,scope=Namespaced
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RemovalFence struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec RemovalFenceSpec `json:"spec"`
}

// RemovalFenceSpec is what one part of the fence refuses, and what its refusals say.
type RemovalFenceSpec struct {
	// Message is what every refusal says, besides what it refuses: why the driver is removed and
	// how to keep it.
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Message string `json:"message"`

	// Revision is set on the head only: a digest of the message and of every shard as written,
	// which ends the head's refusals, so that the operator can tell that the API server enforces
	// the fence as it wrote it last.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Revision string `json:"revision,omitempty"`

	// Claims are set on the shards only: the claims, as namespace/name, that no new pod may use.
	// The value is always true: a map lets the policy look a claim up in constant time. Only the
	// operator writes a shard, always whole: atomic, its managed fields are one entry, not one a
	// claim, which made writing 100,000 claims take seconds.
	// +mapType=atomic
	// +optional
	Claims map[string]bool `json:"claims,omitempty"`
}

// RemovalFenceList is a list of RemovalFences.
//
// +kubebuilder:object:root=true
type RemovalFenceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RemovalFence `json:"items"`
}
