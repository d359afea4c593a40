package controller

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/names/olm"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// The finalizer policy has the API server put the SharedVolume finalizer on every new
// SharedVolume as it admits it, so that the controller need not patch each one before it makes
// the claim and the volume: the patch was one of the three custom-resource writes a SharedVolume
// cost (BENCHMARKS.md). The controller still adds the finalizer to any SharedVolume that lacks
// it (older clusters, a policy not yet up, SharedVolumes made before it), so the policy only
// saves work and is never needed for correctness.
//
// Its parameter is the ClusterRole OLM made for the operator's CSV (the one granting its
// clusterPermissions), found by OLM's owner labels, and a missing parameter admits SharedVolumes
// unchanged: OLM deletes that ClusterRole with the CSV, so once the operator is uninstalled, new
// SharedVolumes get no finalizer that nothing would ever remove (deleting them would hang, the
// community operator's known pain). The policy and its binding stay behind after an uninstall,
// inert. A ClusterRole suits because the API server lets only those who may get every object of
// a parameter's kind bind a policy to it, and the operator may already read ClusterRoles; its
// Deployment, say, would have needed cluster-wide reads of Deployments, which hold what their
// pods are given.

// finalizerPolicy is the MutatingAdmissionPolicy; its binding names the parameter.
func finalizerPolicy() *admissionv1ac.MutatingAdmissionPolicyApplyConfiguration {
	return admissionv1ac.MutatingAdmissionPolicy(efs.SharedVolumeFinalizerPolicy).
		WithSpec(admissionv1ac.MutatingAdmissionPolicySpec().
			WithParamKind(admissionv1ac.ParamKind().WithAPIVersion(rbacv1.SchemeGroupVersion.String()).WithKind("ClusterRole")).
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
				admissionv1ac.NamedRuleWithOperations().
					WithOperations(admissionregistrationv1.Create).
					WithAPIGroups(sharedvolumev1alpha1.GroupVersion.Group).
					WithAPIVersions(sharedvolumev1alpha1.GroupVersion.Version).
					WithResources("sharedvolumes"))).
			WithMutations(admissionv1ac.Mutation().
				WithPatchType(admissionregistrationv1.PatchTypeApplyConfiguration).
				WithApplyConfiguration(admissionv1ac.ApplyConfiguration().WithExpression(
					// finalizers is a set: applying it adds the one finalizer and keeps any other.
					fmt.Sprintf("Object{metadata: Object.metadata{finalizers: [%q]}}", efs.SharedVolumeFinalizer)))).
			// A policy that fails must not keep app teams from creating SharedVolumes: the
			// controller adds the finalizer then.
			WithFailurePolicy(admissionregistrationv1.Ignore).
			WithReinvocationPolicy(admissionregistrationv1.NeverReinvocationPolicy))
}

// finalizerPolicyBinding binds the policy to the ClusterRole OLM made for CSV csv in namespace.
func finalizerPolicyBinding(namespace, csv string) *admissionv1ac.MutatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.MutatingAdmissionPolicyBinding(efs.SharedVolumeFinalizerPolicy).
		WithSpec(admissionv1ac.MutatingAdmissionPolicyBindingSpec().
			WithPolicyName(efs.SharedVolumeFinalizerPolicy).
			WithParamRef(admissionv1ac.ParamRef().
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(olm.OwnerLabels(csv, namespace))).
				WithParameterNotFoundAction(admissionregistrationv1.AllowAction)))
}

// ensureFinalizerPolicy applies the finalizer policy and its binding for the operator installed
// from CSV csv in namespace. It reports false, having done nothing, on a cluster that serves no
// MutatingAdmissionPolicy (Kubernetes older than 1.36, or the API turned off).
func ensureFinalizerPolicy(ctx context.Context, kubeClient kubernetes.Interface, namespace, csv string) (bool, error) {
	served, err := kube.Served(kubeClient.Discovery(), admissionregistrationv1.SchemeGroupVersion.String(), "mutatingadmissionpolicies")
	if !served || err != nil {
		return false, err
	}
	// Server-side apply: a no-op when nothing changed, and an update from an older operator
	// otherwise.
	opts := metav1.ApplyOptions{FieldManager: FieldManager, Force: true}
	if _, err := kubeClient.AdmissionregistrationV1().MutatingAdmissionPolicies().Apply(ctx, finalizerPolicy(), opts); err != nil {
		return false, fmt.Errorf("applying MutatingAdmissionPolicy %s: %w", efs.SharedVolumeFinalizerPolicy, err)
	}
	if _, err := kubeClient.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Apply(ctx, finalizerPolicyBinding(namespace, csv), opts); err != nil {
		return false, fmt.Errorf("applying MutatingAdmissionPolicyBinding %s: %w", efs.SharedVolumeFinalizerPolicy, err)
	}
	return true, nil
}

// putUpFinalizerPolicy puts the finalizer policy up for the operator installed from CSV csv in
// namespace, or says why the controller adds every finalizer itself.
func putUpFinalizerPolicy(ctx context.Context, kubeClient kubernetes.Interface, namespace, csv string) {
	if csv == "" {
		klog.Infof("the operator was not installed by OLM (%s is not set): SharedVolumes get their finalizer from the controller, one write each", olm.OperatorConditionEnv)
		return
	}
	up, err := ensureFinalizerPolicy(ctx, kubeClient, namespace, csv)
	switch {
	case err != nil:
		klog.Warningf("SharedVolumes get their finalizer from the controller, one write each: %v", err)
	case !up:
		klog.Infof("this cluster serves no %s MutatingAdmissionPolicy (Kubernetes 1.36 or later): SharedVolumes get their finalizer from the controller, one write each", admissionregistrationv1.SchemeGroupVersion)
	default:
		klog.V(2).Infof("new SharedVolumes get their finalizer from MutatingAdmissionPolicy %s while ClusterServiceVersion %s/%s is installed", efs.SharedVolumeFinalizerPolicy, namespace, csv)
	}
}
