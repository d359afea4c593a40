package operator

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// The removal fence: in the seconds between the operator's last look for EFS volumes in use and
// its deletion of the driver, no new use of an EFS volume is admitted. No look can see a pod
// created after it, and a pod that mounts while the node plugin is being deleted would keep a
// mount whose driver is gone. Its parameter is the ClusterCSIDriver, whose annotations the
// operator sets only for those seconds (fenceAnnotations). Without the revision annotation it
// admits everything, so while volumes in use hold a removal back, EFS provisioning goes on. (A
// ConfigMap parameter would need the operator to read every ConfigMap of the cluster: the API
// server lets only such a user create the policy.) The policy and its binding stay when the
// operator is uninstalled.
//
// Both admission policies the operator applies, this one and the SharedVolume finalizer policy,
// are built from apply configurations and server-side applied. Every name their CEL reads (the
// driver, the annotations, the finalizer) is the constant the operator's own code writes, so the
// policy cannot drift from the operator; the tests apply these same functions' objects to a real
// API server; and an apply that changes nothing is a no-op the API server recognises.

// removalFencePolicy is the ValidatingAdmissionPolicy that refuses, while the ClusterCSIDriver
// carries the fence's annotations, new pods that use a claim bound to an EFS PersistentVolume, new
// EFS PersistentVolumes and new bindings of EFS PersistentVolumes.
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
			WithParamKind(admissionv1ac.ParamKind().WithAPIVersion(clusterCSIDriverGVK.GroupVersion().String()).WithKind(clusterCSIDriverGVK.Kind)).
			WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
				rule("persistentvolumes", admissionregistrationv1.Create, admissionregistrationv1.Update),
				rule("pods", admissionregistrationv1.Create))).
			WithVariables(
				variable("up", fmt.Sprintf("has(params.metadata.annotations) && '%s' in params.metadata.annotations", fenceRevisionKey)),
				variable("efsVolume", fmt.Sprintf("request.resource.resource == 'persistentvolumes' && has(object.spec.csi) && object.spec.csi.driver == '%s'", efs.DriverName)),
				// A claim bound to an EFS volume now would be missing from the parameter: the
				// binder's update of an EFS PersistentVolume's claimRef is refused, as is a new EFS
				// PersistentVolume.
				variable("newClaim", "variables.efsVolume && request.operation == 'UPDATE' && has(object.spec.claimRef) && "+
					"(!has(oldObject.spec.claimRef) || oldObject.spec.claimRef.namespace != object.spec.claimRef.namespace || oldObject.spec.claimRef.name != object.spec.claimRef.name)"),
				variable("claimsKey", fmt.Sprintf("'%s' + request.namespace", fenceClaimsPrefix)),
				variable("claims", "variables.up && variables.claimsKey in params.metadata.annotations ? params.metadata.annotations[variables.claimsKey].split(' ') : []"),
				variable("usesEFSClaim", "request.resource.resource == 'pods' && has(object.spec.volumes) && "+
					"object.spec.volumes.exists(v, has(v.persistentVolumeClaim) && v.persistentVolumeClaim.claimName in variables.claims)"),
				// The revision ends every refusal (fenceRevision), so the operator's probe can tell
				// that the API server enforces the annotations it wrote last, not older ones.
				variable("message", fmt.Sprintf("variables.up ? params.metadata.annotations['%s'] + ' %s' + params.metadata.annotations['%s'] + ')' : ''",
					fenceMessageKey, fenceRevisionOpening, fenceRevisionKey)),
			).
			WithValidations(
				refuse("!(variables.up && variables.efsVolume && request.operation == 'CREATE')", "no new EFS PersistentVolume is admitted"),
				refuse("!(variables.up && variables.newClaim)", "no EFS PersistentVolume is bound to a new claim"),
				refuse("!variables.usesEFSClaim", "no new pod may use an EFS volume"),
			))
}

// removalFenceBinding binds the fence to the ClusterCSIDriver the operator serves; without it,
// everything is admitted.
func removalFenceBinding() *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(efs.RemovalFence).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(efs.RemovalFence).
			WithParamRef(admissionv1ac.ParamRef().WithName(efs.CRName).WithParameterNotFoundAction(admissionregistrationv1.AllowAction)).
			WithValidationActions(admissionregistrationv1.Deny))
}
