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
	corelisters "k8s.io/client-go/listers/core/v1"

	csikube "github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/operator/assets"
)

// fenceSettle is how long the fence must have refused before the last look for volumes in use. A
// pod admitted just before the fence took effect is written to etcd a few milliseconds after its
// admission; by then it is seen.
const fenceSettle = time.Second

// fenceRetry is how soon a fence the API server does not enforce yet (its policy informer lags
// a create or an update of the policy or of its ConfigMap) is probed again.
const fenceRetry = 200 * time.Millisecond

// fenceMessageKey holds the refusal's message in the fence's ConfigMap. Namespaces, the other
// keys, cannot contain a dot.
const fenceMessageKey = "fence.message"

// removalFence closes the gap between the last look for volumes in use and the deletes of a
// removal: no look can see a pod created after it, but a ValidatingAdmissionPolicy can refuse it.
// The policy refuses, while its ConfigMap exists, new pods that use a claim bound to an EFS
// PersistentVolume, new EFS PersistentVolumes and new bindings of EFS PersistentVolumes. The
// lifecycle raises it (writes the ConfigMap) only for the seconds of a removal, and allows the
// removal once a dry-run probe volume has been refused, under the ConfigMap it wrote last, for
// fenceSettle.
type removalFence struct {
	kube       kubernetes.Interface
	namespace  string
	configMaps corelisters.ConfigMapNamespaceLister
	policy     *admissionregistrationv1.ValidatingAdmissionPolicy
	binding    *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	cache      resourceapply.ResourceCache
	// upSince is when the probe was first refused under the current ConfigMap; zero when the fence
	// is not known to hold.
	upSince time.Time
	// served is set once the API server was found to serve ValidatingAdmissionPolicies; warned,
	// once the admin was told that it does not.
	served, warned bool
}

func newRemovalFence(kube kubernetes.Interface, namespace string, configMaps corelisters.ConfigMapLister, read func(string) ([]byte, error)) (*removalFence, error) {
	policy, err := read(assets.RemovalFenceFile)
	if err != nil {
		return nil, err
	}
	binding, err := read(assets.RemovalFenceBindingFile)
	if err != nil {
		return nil, err
	}
	f := &removalFence{
		kube:      kube,
		namespace: namespace,
		policy:    resourceread.ReadValidatingAdmissionPolicyV1OrDie(policy),
		binding:   resourceread.ReadValidatingAdmissionPolicyBindingV1OrDie(binding),
		cache:     resourceapply.NewResourceCache(),
	}
	if configMaps != nil {
		f.configMaps = configMaps.ConfigMaps(namespace)
	}
	// The CSV grants updates of these names only, refusals are recognised by the name, and the
	// binding must read the ConfigMap the operator writes.
	if f.policy.Name != efs.RemovalFence || f.binding.Name != efs.RemovalFence || f.binding.Spec.PolicyName != efs.RemovalFence ||
		f.binding.Spec.ParamRef == nil || f.binding.Spec.ParamRef.Name != efs.RemovalFence || f.binding.Spec.ParamRef.Namespace != namespace {
		return nil, fmt.Errorf("the removal fence's manifests must name %s and bind it to ConfigMap %s/%s: policy %q, binding %q of policy %q",
			efs.RemovalFence, namespace, efs.RemovalFence, f.policy.Name, f.binding.Name, f.binding.Spec.PolicyName)
	}
	return f, nil
}

// raise puts the fence up over claims (namespace -> claim names bound to EFS volumes), and
// reports false on a cluster that serves no ValidatingAdmissionPolicy (Kubernetes older than
// 1.30), where the looks right before each delete are all there is. A changed policy or claim
// set must be proved again.
func (f *removalFence) raise(ctx context.Context, recorder events.Recorder, claims map[string][]string, message string) (bool, error) {
	if !f.served {
		served, err := csikube.Served(f.kube.Discovery(), admissionregistrationv1.SchemeGroupVersion.String(), "validatingadmissionpolicies")
		if err != nil {
			return false, err
		}
		f.served = served
	}
	if !f.served {
		if !f.warned {
			recorder.Warningf("RemovalFenceUnavailable", "this cluster serves no %s ValidatingAdmissionPolicy (Kubernetes 1.30 or later), so new uses of EFS volumes are not refused while the driver is removed: "+
				"a pod that starts in the moment between the operator's last look and a delete finds the driver gone, until the next round puts it back a second later", admissionregistrationv1.SchemeGroupVersion)
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
	want := fenceConfigMap(f.namespace, claims, message)
	_, paramChanged, err := resourceapply.ApplyConfigMap(ctx, f.kube.CoreV1(), recorder, want)
	if err != nil {
		return false, fmt.Errorf("writing the removal fence's ConfigMap %s/%s: %w", f.namespace, efs.RemovalFence, err)
	}
	if policyChanged || bindingChanged || paramChanged {
		f.upSince = time.Time{}
	}
	return true, nil
}

// fenceConfigMap is the fence's parameter: each namespace's claims, space-separated and sorted.
func fenceConfigMap(namespace string, claims map[string][]string, message string) *corev1.ConfigMap {
	data := map[string]string{fenceMessageKey: message}
	for ns, names := range claims {
		data[ns] = strings.Join(slices.Sorted(slices.Values(names)), " ")
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: efs.RemovalFence},
		Data:       data,
	}
}

// lower takes the fence down: new uses of EFS volumes are admitted again.
func (f *removalFence) lower(ctx context.Context) error {
	f.upSince = time.Time{}
	if f.configMaps != nil {
		if _, err := f.configMaps.Get(efs.RemovalFence); apierrors.IsNotFound(err) {
			return nil
		}
	}
	err := f.kube.CoreV1().ConfigMaps(f.namespace).Delete(ctx, efs.RemovalFence, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("taking the removal fence down (deleting ConfigMap %s/%s): %w", f.namespace, efs.RemovalFence, err)
	}
	return nil
}

// settle returns how long to wait before the last look for volumes in use: zero once the fence
// has refused the probe, under the ConfigMap it holds now, for fenceSettle.
func (f *removalFence) settle(ctx context.Context) (time.Duration, error) {
	refused, err := f.probe(ctx)
	if err != nil {
		return 0, err
	}
	if !refused {
		f.upSince = time.Time{}
		return fenceRetry, nil
	}
	if f.upSince.IsZero() {
		f.upSince = time.Now()
	}
	return max(0, fenceSettle-time.Since(f.upSince)), nil
}

// probe asks the API server, in a dry run that stores nothing, to admit an EFS PersistentVolume,
// and reports whether the fence refused it under the ConfigMap the operator wrote last.
func (f *removalFence) probe(ctx context.Context) (bool, error) {
	cm, err := f.kube.CoreV1().ConfigMaps(f.namespace).Get(ctx, efs.RemovalFence, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the removal fence's ConfigMap: %w", err)
	}
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
	_, err = f.kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: efs.OperatorName})
	switch {
	case err == nil:
		return false, nil
	case RefusedByRemovalFence(err):
		return strings.Contains(err.Error(), fenceRevision(cm.ResourceVersion)), nil
	default:
		return false, fmt.Errorf("probing the removal fence with a dry-run EFS PersistentVolume: %w", err)
	}
}

// fenceRevision is how a refusal names the ConfigMap it was made under (removal_fence.yaml).
func fenceRevision(resourceVersion string) string {
	return "(removal fence " + resourceVersion + ")"
}

// RefusedByRemovalFence reports whether an API error is the removal fence's refusal.
func RefusedByRemovalFence(err error) bool {
	// The API server's words for a refusal by a ValidatingAdmissionPolicy.
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+efs.RemovalFence+"'")
}
