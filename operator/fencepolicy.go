package operator

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	fencev1alpha1 "github.com/csi-olm/csi-olm/operator/api/v1alpha1"
)

// The removal fence: in the seconds between the operator's last look for EFS volumes in use and
// its deletion of the driver, no new use of an EFS volume is admitted. No look can see a pod
// created after it, and a pod that mounts while the node plugin is being deleted would keep a
// mount whose driver is gone. Its parameters are the RemovalFences of the operator's namespace,
// which the operator writes only for those seconds (removalFence.write): without them the
// binding admits everything, so while volumes in use hold a removal back, EFS provisioning goes
// on. The policy and its binding stay when the operator is uninstalled.
//
// Every shard is evaluated for every pod created while the fence is up, and looks each of the
// pod's claims up in a map: the cost of an admission does not grow with the number of claims.
// (The parameter was once annotations of the ClusterCSIDriver, which Kubernetes caps at 256 KiB:
// about 10,000 claims.)
//
// Both admission policies the operator applies, this one and the SharedVolume finalizer policy,
// are built from apply configurations and server-side applied. Every name their CEL reads (the
// driver, the RemovalFence's fields, the finalizer) is the constant or Go type the operator's
// own code writes, so the policy cannot drift from the operator; the tests apply these same
// functions' objects to a real API server; and an apply that changes nothing is a no-op the API
// server recognises.

// removalFencePolicy is the ValidatingAdmissionPolicy that refuses new pods that use a claim a
// shard holds, and, through the head, new EFS PersistentVolumes and new bindings of EFS
// PersistentVolumes.
func removalFencePolicy() *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	variable := func(name, expression string) *admissionv1ac.VariableApplyConfiguration {
		return admissionv1ac.Variable().WithName(name).WithExpression(expression)
	}
	refuse := func(expression, message string) *admissionv1ac.ValidationApplyConfiguration {
		return admissionv1ac.Validation().WithExpression(expression).WithReason(metav1.StatusReasonForbidden).
			WithMessageExpression(fmt.Sprintf("'%s: ' + variables.message", message))
	}
	rule := func(resource string, operations ...admissionregistrationv1.OperationType) *admissionv1ac.NamedRuleWithOperationsApplyConfiguration {
		return admissionv1ac.NamedRuleWithOperations().WithAPIGroups("").WithAPIVersions("v1").
			WithOperations(operations...).WithResources(resource).WithScope(admissionregistrationv1.AllScopes)
	}
	return admissionv1ac.ValidatingAdmissionPolicy(efs.RemovalFence).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicySpec().
			WithFailurePolicy(admissionregistrationv1.Fail).
			WithParamKind(admissionv1ac.ParamKind().WithAPIVersion(fencev1alpha1.GroupVersion.String()).WithKind(fencev1alpha1.Kind)).
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
				rule("persistentvolumes", admissionregistrationv1.Create, admissionregistrationv1.Update),
				rule("pods", admissionregistrationv1.Create))).
			WithVariables(
				variable("head", "has(params.spec.revision)"),
				variable("efsVolume", fmt.Sprintf("request.resource.resource == 'persistentvolumes' && has(object.spec.csi) && object.spec.csi.driver == '%s'", efs.DriverName)),
				// A claim bound to an EFS volume now would be missing from the shards: the
				// binder's update of an EFS PersistentVolume's claimRef is refused, as is a new EFS
				// PersistentVolume.
				variable("newClaim", "variables.efsVolume && request.operation == 'UPDATE' && has(object.spec.claimRef) && "+
					"(!has(oldObject.spec.claimRef) || oldObject.spec.claimRef.namespace != object.spec.claimRef.namespace || oldObject.spec.claimRef.name != object.spec.claimRef.name)"),
				variable("usesFencedClaim", "request.resource.resource == 'pods' && has(params.spec.claims) && has(object.spec.volumes) && "+
					"object.spec.volumes.exists(v, has(v.persistentVolumeClaim) && (request.namespace + '/' + v.persistentVolumeClaim.claimName) in params.spec.claims)"),
				// The head's revision ends its refusals (fenceRevision), so the operator's probe
				// can tell that the API server enforces the fence it wrote last, not an older one.
				variable("message", fmt.Sprintf("params.spec.message + (variables.head ? ' %s' + params.spec.revision + ')' : '')", fenceRevisionOpening)),
			).
			WithValidations(
				refuse("!(variables.head && variables.efsVolume && request.operation == 'CREATE')", "no new EFS PersistentVolume is admitted"),
				refuse("!(variables.head && variables.newClaim)", "no EFS PersistentVolume is bound to a new claim"),
				refuse("!variables.usesFencedClaim", "no new pod may use an EFS volume"),
			))
}

// removalFenceBinding binds the fence to the RemovalFences in the operator's namespace, for
// requests in every namespace and for cluster-scoped PersistentVolumes; without one, everything
// is admitted.
func removalFenceBinding(namespace string) *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(efs.RemovalFence).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(efs.RemovalFence).
			WithParamRef(admissionv1ac.ParamRef().WithNamespace(namespace).
				WithSelector(metav1ac.LabelSelector().WithMatchExpressions(
					metav1ac.LabelSelectorRequirement().WithKey(efs.RemovalFenceLabel).WithOperator(metav1.LabelSelectorOpExists))).
				WithParameterNotFoundAction(admissionregistrationv1.AllowAction)).
			WithValidationActions(admissionregistrationv1.Deny))
}
