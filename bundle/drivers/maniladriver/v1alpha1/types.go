// Package v1alpha1 is the OLM-era ManilaDriver API (csi.openshift.io/v1alpha1): the cluster-scoped
// singleton `cluster` that the 4.5 OpenStack Manila operator watched. It is kept so that the
// 4.5 bundle can be reproduced and so that `csi-olm migrate cso` can release it.
//
// +kubebuilder:object:generate=true
// +groupName=csi.openshift.io
package v1alpha1

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of ManilaDriver.
var GroupVersion = schema.GroupVersion{Group: "csi.openshift.io", Version: "v1alpha1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &ManilaDriver{}, &ManilaDriverList{})
		metav1.AddToGroupVersion(scheme, GroupVersion)
		return nil
	})
	// AddToScheme registers ManilaDriver with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

const (
	// Kind is the ManilaDriver kind name.
	Kind = "ManilaDriver"
	// Name is the only name a ManilaDriver may have. The CRD restricts it in the schema of
	// metadata.name (../crd adds that to what controller-gen generates), not with a CEL rule:
	// the OpenShift 4.5 clusters this API is for run Kubernetes 1.18, which ignores CEL rules.
	Name = "cluster"
	// Finalizer is what the 4.5 operator put on the CR; while it is there, deleting the CR
	// runs the old operator's uninstall of the driver.
	Finalizer = "finalizer.manila.csi.openshift.io"
)

// ManilaDriver configures the OLM-era operator that manages the OpenStack Manila CSI driver.
// It is a singleton: the operator acts on the object named cluster alone, and the API server
// refuses any other name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=maniladrivers,scope=Cluster
// +kubebuilder:metadata:annotations="kube-compat.csi-olm.io/self.status.latestAvailableRevision=Kubernetes older than 1.25 ignores this guard of openshift/api's OperatorStatus against a revision going back. Only the operator writes status, and only library-go's revision controller, which CSI driver operators do not run, sets latestAvailableRevision."
type ManilaDriver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   ManilaDriverSpec   `json:"spec"`
	Status ManilaDriverStatus `json:"status,omitempty"`
}

// ManilaDriverSpec is the desired state of the driver operator.
type ManilaDriverSpec struct {
	operatorv1.OperatorSpec `json:",inline"`
}

// ManilaDriverStatus is the observed state of the driver operator.
type ManilaDriverStatus struct {
	operatorv1.OperatorStatus `json:",inline"`
}

// ManilaDriverList is a list of ManilaDriver objects.
//
// +kubebuilder:object:root=true
type ManilaDriverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManilaDriver `json:"items"`
}
