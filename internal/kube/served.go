package kube

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// Served reports whether the API server serves resource (a plural name such as
// "validatingadmissionpolicies") in groupVersion. An admission API that a cluster's Kubernetes
// is too old for, or that is switched off, is not served: an answer, not an error.
func Served(disco discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	resources, err := disco.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }), nil
}
