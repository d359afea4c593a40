package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/resource/resourceapply"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/operator/assets"
)

// fenceSettle is how long the fence must have refused before the last count of volumes. A create
// admitted just before the fence took effect is written to etcd a few milliseconds after its
// admission; by then it is counted.
const fenceSettle = time.Second

// fenceRetry is how soon a fence the API server does not enforce yet (its policy informer lags
// a create or an update of the policy or of the ClusterCSIDriver) is probed again.
const fenceRetry = 200 * time.Millisecond

// removalFence closes the gap between the last count of volumes and the deletes of a removal: no
// count can see a volume created after it, but a ValidatingAdmissionPolicy can refuse it. The
// policy refuses EFS PersistentVolumes while the ClusterCSIDriver is Removed, being deleted, or
// reports RemovingDriver (so that setting it back to Managed does not open the fence while a
// removal round is still deleting). The uninstall controller allows a removal only once a
// dry-run probe volume has been refused for fenceSettle.
type removalFence struct {
	kube    kubernetes.Interface
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	cache   resourceapply.ResourceCache
	// upSince is when the probe was first refused in this removal; zero when the fence is not
	// known to hold.
	upSince time.Time
	// served is set once the API server was found to serve ValidatingAdmissionPolicies; warned,
	// once the admin was told that it does not.
	served, warned bool
}

func newRemovalFence(kube kubernetes.Interface, read func(string) ([]byte, error)) (*removalFence, error) {
	policy, err := read(assets.RemovalFenceFile)
	if err != nil {
		return nil, err
	}
	binding, err := read(assets.RemovalFenceBindingFile)
	if err != nil {
		return nil, err
	}
	f := &removalFence{
		kube:    kube,
		policy:  resourceread.ReadValidatingAdmissionPolicyV1OrDie(policy),
		binding: resourceread.ReadValidatingAdmissionPolicyBindingV1OrDie(binding),
		cache:   resourceapply.NewResourceCache(),
	}
	// The CSV grants updates of these names only, refusals are recognised by the name, and the
	// binding must read the one CR the operator serves.
	if f.policy.Name != efs.RemovalFence || f.binding.Name != efs.RemovalFence || f.binding.Spec.PolicyName != efs.RemovalFence ||
		f.binding.Spec.ParamRef == nil || f.binding.Spec.ParamRef.Name != efs.CRName {
		return nil, fmt.Errorf("the removal fence's manifests must name %s and bind it to ClusterCSIDriver %s: policy %q, binding %q of policy %q",
			efs.RemovalFence, efs.CRName, f.policy.Name, f.binding.Name, f.binding.Spec.PolicyName)
	}
	return f, nil
}

// open forgets that the fence held: the next removal proves it again.
func (f *removalFence) open() { f.upSince = time.Time{} }

// ensure puts the fence up, and reports false on a cluster that serves no
// ValidatingAdmissionPolicy (Kubernetes older than 1.30), where the counts right before each
// delete are all there is.
func (f *removalFence) ensure(ctx context.Context, recorder events.Recorder) (bool, error) {
	if !f.served {
		resources, err := f.kube.Discovery().ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("discovering %s: %w", admissionregistrationv1.SchemeGroupVersion, err)
		}
		f.served = resources != nil && slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool {
			return r.Name == "validatingadmissionpolicies"
		})
	}
	if !f.served {
		if !f.warned {
			recorder.Warningf("RemovalFenceUnavailable", "this cluster serves no %s ValidatingAdmissionPolicy (Kubernetes 1.30 or later), so new EFS PersistentVolumes are not refused while the driver is removed: "+
				"one created in the moment between the operator's last count and a delete finds the driver gone, until the next round puts it back a second later", admissionregistrationv1.SchemeGroupVersion)
			f.warned = true
		}
		return false, nil
	}
	_, policyChanged, err := resourceapply.ApplyValidatingAdmissionPolicyV1(ctx, f.kube.AdmissionregistrationV1(), recorder, f.policy, f.cache)
	if err != nil {
		return false, fmt.Errorf("applying ValidatingAdmissionPolicy %s: %w", f.policy.Name, err)
	}
	_, bindingChanged, err := resourceapply.ApplyValidatingAdmissionPolicyBindingV1(ctx, f.kube.AdmissionregistrationV1(), recorder, f.binding, f.cache)
	if err != nil {
		return false, fmt.Errorf("applying ValidatingAdmissionPolicyBinding %s: %w", f.binding.Name, err)
	}
	if policyChanged || bindingChanged {
		f.open()
	}
	return true, nil
}

// settle returns how long to wait before the volumes are counted for the last time: zero once
// the fence has refused the probe for fenceSettle.
func (f *removalFence) settle(ctx context.Context) (time.Duration, error) {
	refused, err := f.probe(ctx)
	if err != nil {
		return 0, err
	}
	if !refused {
		f.open()
		return fenceRetry, nil
	}
	if f.upSince.IsZero() {
		f.upSince = time.Now()
	}
	return max(0, fenceSettle-time.Since(f.upSince)), nil
}

// probe asks the API server, in a dry run that stores nothing, to admit an EFS PersistentVolume,
// and reports whether the fence refused it.
func (f *removalFence) probe(ctx context.Context) (bool, error) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "efs-fence-probe-"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: efs.DriverName, VolumeHandle: "fs-00000000"},
			},
		},
	}
	_, err := f.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: efs.OperatorName})
	switch {
	case err == nil:
		return false, nil
	case RefusedByRemovalFence(err):
		return true, nil
	default:
		return false, fmt.Errorf("probing the removal fence with a dry-run EFS PersistentVolume: %w", err)
	}
}

// RefusedByRemovalFence reports whether an API error is the removal fence's refusal.
func RefusedByRemovalFence(err error) bool {
	// The API server's words for a refusal by a ValidatingAdmissionPolicy.
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+efs.RemovalFence+"'")
}
