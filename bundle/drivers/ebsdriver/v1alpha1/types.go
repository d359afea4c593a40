// Package v1alpha1 is the OLM-era AWSEBSDriver API (csi.openshift.io/v1alpha1): the cluster-scoped
// singleton `cluster` that the 4.5 AWS EBS operator watched. It is kept so that the
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

// GroupVersion is the API group and version of AWSEBSDriver.
var GroupVersion = schema.GroupVersion{Group: "csi.openshift.io", Version: "v1alpha1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(GroupVersion, &AWSEBSDriver{}, &AWSEBSDriverList{})
		metav1.AddToGroupVersion(scheme, GroupVersion)
		return nil
	})
	// AddToScheme registers AWSEBSDriver with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

const (
	// Kind is the AWSEBSDriver kind name.
	Kind = "AWSEBSDriver"
	// Name is the only name an AWSEBSDriver may have. The CRD restricts it in the schema of
	// metadata.name (../crd adds that to what controller-gen generates), not with a CEL rule:
	// the OpenShift 4.5 clusters this API is for run Kubernetes 1.18, which ignores CEL rules.
	Name = "cluster"
	// Finalizer is what the 4.5 operator put on the CR; while it is there, deleting the CR
	// runs the old operator's uninstall of the driver.
	Finalizer = "operator.csi.openshift.io"
)

// AWSEBSDriver configures the OLM-era operator that manages the AWS EBS CSI driver.
// It is a singleton: the operator acts on the object named cluster alone, and the API server
// refuses any other name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=awsebsdrivers,scope=Cluster
// +kubebuilder:metadata:annotations="kube-compat.csi-olm.io/self.status.latestAvailableRevision=Kubernetes older than 1.25 ignores this guard of openshift/api's OperatorStatus against a revision going back. Only the operator writes status, and only library-go's revision controller, which CSI driver operators do not run, sets latestAvailableRevision."
type AWSEBSDriver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   AWSEBSDriverSpec   `json:"spec"`
	Status AWSEBSDriverStatus `json:"status,omitempty"`
}

// AWSEBSDriverSpec is the desired state of the driver operator.
type AWSEBSDriverSpec struct {
	operatorv1.OperatorSpec `json:",inline"`
}

// AWSEBSDriverStatus is the observed state of the driver operator.
type AWSEBSDriverStatus struct {
	operatorv1.OperatorStatus `json:",inline"`
}

// AWSEBSDriverList is a list of AWSEBSDriver objects.
//
// +kubebuilder:object:root=true
type AWSEBSDriverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AWSEBSDriver `json:"items"`
}
