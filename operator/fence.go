package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openshift/library-go/pkg/operator/events"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// fenceSettle is how long the fence must have refused before the last look for volumes in use. A
// pod admitted just before the fence took effect is written to etcd a few milliseconds after its
// admission; by then it is seen.
const fenceSettle = time.Second

// fenceRetry is how soon a fence the API server does not enforce yet (its policy informer lags
// a create or an update of the policy or of the ClusterCSIDriver's annotations) is probed again.
const fenceRetry = 200 * time.Millisecond

// The fence's parameter is annotations of the ClusterCSIDriver: the claims of each namespace (under
// fenceClaimsPrefix + namespace), the refusal's message and a revision of the two, whose presence
// puts the fence up.
const (
	fenceClaimsPrefix = "removal-fence.aws-efs.csi-olm.io/"
	fenceMessageKey   = "aws-efs.csi-olm.io/removal-fence-message"
	fenceRevisionKey  = "aws-efs.csi-olm.io/removal-fence-revision"
	fenceKeyPrefix    = "aws-efs.csi-olm.io/removal-fence-"
)

// removalFence closes the gap between the last look for volumes in use and the deletes of a
// removal: no look can see a pod created after it, but a ValidatingAdmissionPolicy can refuse it.
// The policy refuses, while the ClusterCSIDriver carries the fence's annotations, new pods that use
// a claim bound to an EFS PersistentVolume, new EFS PersistentVolumes and new bindings of EFS
// PersistentVolumes. The lifecycle raises it (writes the annotations) only for the seconds of a
// removal, and allows the removal once a dry-run probe volume has been refused, under the
// revision it wrote last, for fenceSettle.
type removalFence struct {
	kubeClient kubernetes.Interface
	cr         dynamic.ResourceInterface
	// applied are the resourceVersions of the policy and its binding as last applied: a changed
	// one is a changed fence, which must be proved again.
	applied [2]string
	// upSince is when the probe was first refused under the current revision; zero when the fence
	// is not known to hold.
	upSince time.Time
	// revision is the fence's revision that raise wrote last, which the probe's refusal must name.
	revision string
	// served is set once the API server was found to serve ValidatingAdmissionPolicies; warned,
	// once the admin was told that it does not.
	served, warned bool
}

func newRemovalFence(kubeClient kubernetes.Interface, dyn dynamic.Interface) *removalFence {
	f := &removalFence{kubeClient: kubeClient}
	if dyn != nil {
		f.cr = dyn.Resource(clusterCSIDriverGVR)
	}
	return f
}

// raise puts the fence up over claims (namespace -> claim names bound to EFS volumes), and
// reports false on a cluster that serves no ValidatingAdmissionPolicy (Kubernetes older than
// 1.30), where the looks right before each delete are all there is. A changed policy or claim
// set must be proved again.
func (f *removalFence) raise(ctx context.Context, recorder events.Recorder, claims map[string][]string, message string) (bool, error) {
	if !f.served {
		served, err := kube.Served(f.kubeClient.Discovery(), admissionregistrationv1.SchemeGroupVersion.String(), "validatingadmissionpolicies")
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
	opts := metav1.ApplyOptions{FieldManager: efs.OperatorName, Force: true}
	admission := f.kubeClient.AdmissionregistrationV1()
	policy, err := admission.ValidatingAdmissionPolicies().Apply(ctx, removalFencePolicy(), opts)
	if err != nil {
		return false, fmt.Errorf("applying ValidatingAdmissionPolicy %s: %w", efs.RemovalFence, err)
	}
	binding, err := admission.ValidatingAdmissionPolicyBindings().Apply(ctx, removalFenceBinding(), opts)
	if err != nil {
		return false, fmt.Errorf("applying ValidatingAdmissionPolicyBinding %s: %w", efs.RemovalFence, err)
	}
	applied := [2]string{policy.ResourceVersion, binding.ResourceVersion}
	fenceChanged := applied != f.applied
	f.applied = applied
	want := fenceAnnotations(claims, message)
	paramChanged, err := f.annotate(ctx, want)
	if err != nil {
		return false, err
	}
	f.revision = want[fenceRevisionKey]
	if fenceChanged || paramChanged {
		f.upSince = time.Time{}
	}
	return true, nil
}

// fenceAnnotations are the fence's parameter: each namespace's claims, space-separated and sorted,
// the message, and a revision that changes with either.
func fenceAnnotations(claims map[string][]string, message string) map[string]string {
	a := map[string]string{fenceMessageKey: message}
	for ns, names := range claims {
		a[fenceClaimsPrefix+ns] = strings.Join(slices.Sorted(slices.Values(names)), " ")
	}
	sum := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(a)) {
		fmt.Fprintf(sum, "%s=%s\n", k, a[k])
	}
	a[fenceRevisionKey] = hex.EncodeToString(sum.Sum(nil))[:12]
	return a
}

// isFenceAnnotation reports whether an annotation of the ClusterCSIDriver belongs to the fence.
func isFenceAnnotation(key string) bool {
	return strings.HasPrefix(key, fenceClaimsPrefix) || strings.HasPrefix(key, fenceKeyPrefix)
}

// annotate makes the fence's annotations of the ClusterCSIDriver want (none: the fence is down),
// in one merge patch, and reports whether it changed them.
func (f *removalFence) annotate(ctx context.Context, want map[string]string) (bool, error) {
	cr, err := f.cr.Get(ctx, efs.CRName, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading ClusterCSIDriver %s for the removal fence: %w", efs.CRName, err)
	}
	current := cr.GetAnnotations()
	patch := map[string]any{}
	for k := range current {
		if _, kept := want[k]; isFenceAnnotation(k) && !kept {
			patch[k] = nil
		}
	}
	for k, v := range want {
		if current[k] != v {
			patch[k] = v
		}
	}
	if len(patch) == 0 {
		return false, nil
	}
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err != nil {
		return false, err
	}
	if _, err := f.cr.Patch(ctx, efs.CRName, types.MergePatchType, raw, metav1.PatchOptions{FieldManager: efs.OperatorName}); err != nil {
		return false, fmt.Errorf("writing the removal fence's annotations of ClusterCSIDriver %s: %w", efs.CRName, err)
	}
	return true, nil
}

// lower takes the fence down: new uses of EFS volumes are admitted again. annotations are the
// ClusterCSIDriver's as the caller last saw them, so that a fence that is down costs no request.
func (f *removalFence) lower(ctx context.Context, annotations map[string]string) error {
	f.upSince = time.Time{}
	if !slices.ContainsFunc(slices.Collect(maps.Keys(annotations)), isFenceAnnotation) {
		return nil
	}
	_, err := f.annotate(ctx, nil)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// settle returns how long to wait before the last look for volumes in use: zero once the fence
// has refused the probe, under the revision it holds now, for fenceSettle.
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
// and reports whether the fence refused it under the revision the operator wrote last.
func (f *removalFence) probe(ctx context.Context) (bool, error) {
	if f.revision == "" {
		return false, nil
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
	_, err := f.kubeClient.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: efs.OperatorName})
	switch {
	case err == nil:
		return false, nil
	case RefusedByRemovalFence(err):
		return strings.Contains(err.Error(), fenceRevision(f.revision)), nil
	default:
		return false, fmt.Errorf("probing the removal fence with a dry-run EFS PersistentVolume: %w", err)
	}
}

// fenceRevisionOpening opens the revision a refusal ends with.
const fenceRevisionOpening = "(removal fence "

// fenceRevision is how a refusal names the revision it was made under (removalFencePolicy).
func fenceRevision(revision string) string {
	return fenceRevisionOpening + revision + ")"
}

// RefusedByRemovalFence reports whether an API error is the removal fence's refusal.
func RefusedByRemovalFence(err error) bool {
	// The API server's words for a refusal by a ValidatingAdmissionPolicy.
	return err != nil && strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+efs.RemovalFence+"'")
}
