package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
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
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	fencev1alpha1 "github.com/csi-olm/csi-olm/operator/api/v1alpha1"
)

// fenceSettle is how long the fence must have refused before the last look for volumes in use. A
// pod admitted just before the fence took effect is written to etcd a few milliseconds after its
// admission; by then it is seen.
const fenceSettle = time.Second

// fenceRetry is how soon a fence the API server does not enforce yet (its policy informer lags
// a create or an update of the policy or of a RemovalFence) is probed again.
const fenceRetry = 200 * time.Millisecond

// fenceShardBytes is how much of the claims one shard of the fence holds, on average: the API
// server stores objects of at most 1.5 MiB, and a shard that the spread of claims over shards
// (fenceShards) fills past fenceShardMaxBytes makes them twice as many.
const (
	fenceShardBytes    = 256 << 10
	fenceShardMaxBytes = 1 << 20
)

// removalFence closes the gap between the last look for volumes in use and the deletes of a
// removal: no look can see a pod created after it, but a ValidatingAdmissionPolicy can refuse it.
// The policy's parameters are RemovalFences in the operator's namespace, which exist only for the
// seconds of a removal: shards that hold the claims bound to EFS PersistentVolumes, whose new pods
// are refused, and a head, which refuses new EFS PersistentVolumes and new bindings of them, and
// whose refusals name the revision of the whole fence. The lifecycle raises the fence and allows
// the removal once a dry-run probe volume has been refused, under the revision written last, for
// fenceSettle.
type removalFence struct {
	kubeClient kubernetes.Interface
	// fences and fenceMeta are the RemovalFences of the operator's namespace, whole and as
	// metadata only.
	fences    dynamic.ResourceInterface
	fenceMeta metadata.ResourceInterface
	namespace string
	// applied are the resourceVersions of the policy and its binding as last applied: a changed
	// one is a changed fence, which must be proved again.
	applied [2]string
	// written is each RemovalFence as the operator last wrote it; a changed or missing one is
	// written again.
	written map[string]writtenFence
	// down is set once the operator has found no RemovalFence left, so that a fence that is down
	// costs no request.
	down bool
	// upSince is when the probe was first refused under the current revision; zero when the fence
	// is not known to hold.
	upSince time.Time
	// revision is the fence's revision that raise wrote last, which the probe's refusal must name;
	// writtenAt, when it was written.
	revision  string
	writtenAt time.Time
	// served is set once the API server was found to serve ValidatingAdmissionPolicies; warned,
	// once the admin was told that it does not.
	served, warned bool
}

// writtenFence is a RemovalFence as written: the digest of its spec and the resourceVersion the
// API server gave it.
type writtenFence struct {
	digest, resourceVersion string
}

var removalFenceGVR = fencev1alpha1.GroupVersion.WithResource(fencev1alpha1.Resource)

func newRemovalFence(kubeClient kubernetes.Interface, dyn dynamic.Interface, meta metadata.Interface, namespace string) *removalFence {
	f := &removalFence{kubeClient: kubeClient, namespace: namespace}
	if dyn != nil {
		f.fences = dyn.Resource(removalFenceGVR).Namespace(namespace)
	}
	if meta != nil {
		f.fenceMeta = meta.Resource(removalFenceGVR).Namespace(namespace)
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
	binding, err := admission.ValidatingAdmissionPolicyBindings().Apply(ctx, removalFenceBinding(f.namespace), opts)
	if err != nil {
		return false, fmt.Errorf("applying ValidatingAdmissionPolicyBinding %s: %w", efs.RemovalFence, err)
	}
	applied := [2]string{policy.ResourceVersion, binding.ResourceVersion}
	fenceChanged := applied != f.applied
	f.applied = applied
	paramChanged, err := f.write(ctx, fenceShards(claims), message)
	if err != nil {
		return false, err
	}
	if fenceChanged || paramChanged {
		f.upSince = time.Time{}
	}
	return true, nil
}

// fenceShards spreads the claims, as namespace/name, over as few shards as keep each under
// fenceShardBytes on average, a power of two of them, by a hash of the claim: a claim bound
// during the fence changes one shard, not all that follow it.
func fenceShards(claims map[string][]string) []map[string]bool {
	var keys []string
	total := 0
	for ns, names := range claims {
		for _, name := range names {
			key := ns + "/" + name
			keys = append(keys, key)
			total += fenceClaimBytes(key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	n := 1
	for n*fenceShardBytes < total {
		n *= 2
	}
	for {
		shards, sizes := make([]map[string]bool, n), make([]int, n)
		for i := range shards {
			shards[i] = map[string]bool{}
		}
		for _, key := range keys {
			h := fnv.New32a()
			h.Write([]byte(key))
			i := int(h.Sum32() % uint32(n))
			shards[i][key] = true
			sizes[i] += fenceClaimBytes(key)
		}
		if slices.Max(sizes) <= fenceShardMaxBytes {
			return shards
		}
		n *= 2
	}
}

// fenceClaimBytes is what a claim's entry takes in a shard's JSON: "key":true,
func fenceClaimBytes(key string) int { return len(key) + 8 }

// fenceShardName names shard i; the head is named after the policy.
func fenceShardName(i int) string { return fmt.Sprintf("%s-%d", efs.RemovalFence, i) }

// write makes the RemovalFences the shards and a head over them, and reports whether it changed
// any. The head goes last, with a revision of every shard as the API server stored it: the API
// server reads the parameters of one binding through one watch, in the order they were written,
// so once a refusal names the head's revision, every shard is enforced as written.
func (f *removalFence) write(ctx context.Context, shards []map[string]bool, message string) (bool, error) {
	current, err := f.list(ctx)
	if err != nil {
		return false, err
	}
	f.down = false
	if f.written == nil {
		f.written = map[string]writtenFence{}
	}
	start, writes := time.Now(), 0
	revision := sha256.New()
	fmt.Fprintf(revision, "%s\n", message)
	names := make([]string, len(shards))
	for i, claims := range shards {
		names[i] = fenceShardName(i)
		rv, wrote, err := f.apply(ctx, current, names[i], "shard", fencev1alpha1.RemovalFenceSpec{Message: message, Claims: claims})
		if err != nil {
			return false, err
		}
		if wrote {
			writes++
		}
		fmt.Fprintf(revision, "%s=%s\n", names[i], rv)
	}
	changed := writes > 0
	// A shard of a larger fence is left over: it only refuses more, but it is not the fence.
	for _, name := range slices.Sorted(maps.Keys(current)) {
		if name != efs.RemovalFence && !slices.Contains(names, name) {
			if err := f.delete(ctx, name); err != nil {
				return false, err
			}
			changed = true
		}
	}
	f.revision = hex.EncodeToString(revision.Sum(nil))[:12]
	_, wrote, err := f.apply(ctx, current, efs.RemovalFence, "head", fencev1alpha1.RemovalFenceSpec{Message: message, Revision: f.revision})
	if err != nil {
		return false, err
	}
	if wrote {
		changed = true
		writes++
	}
	if changed {
		f.writtenAt = time.Now()
		// How long a fence takes to raise, and then to be enforced (settle), at a cluster's size.
		klog.Infof("removal fence: %d of %d RemovalFences written over %d claims in %s, revision %s",
			writes, len(shards)+1, claimCount(shards), f.writtenAt.Sub(start).Round(time.Millisecond), f.revision)
	}
	return changed, nil
}

// apply writes a RemovalFence, unless the API server holds it as the operator last wrote it
// (current are the resourceVersions it holds), and returns its resourceVersion and whether it
// wrote it. Writing the 16 shards of 100,000 claims takes
// about 2.4 s on 2 cores, most of it the API server's handling of each 200 KB object; four
// written side by side took as long.
func (f *removalFence) apply(ctx context.Context, current map[string]string, name, role string, spec fencev1alpha1.RemovalFenceSpec) (string, bool, error) {
	digest, err := fenceDigest(spec)
	if err != nil {
		return "", false, err
	}
	if w, ok := f.written[name]; ok && w.digest == digest && current[name] == w.resourceVersion {
		return w.resourceVersion, false, nil
	}
	raw, err := json.Marshal(&fencev1alpha1.RemovalFence{
		TypeMeta:   metav1.TypeMeta{APIVersion: fencev1alpha1.GroupVersion.String(), Kind: fencev1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.namespace, Labels: map[string]string{efs.RemovalFenceLabel: role}},
		Spec:       spec,
	})
	if err != nil {
		return "", false, err
	}
	stored, err := f.fences.Patch(ctx, name, types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: efs.OperatorName, Force: ptr.To(true)})
	if err != nil {
		return "", false, fmt.Errorf("writing RemovalFence %s/%s: %w", f.namespace, name, err)
	}
	f.written[name] = writtenFence{digest: digest, resourceVersion: stored.GetResourceVersion()}
	return stored.GetResourceVersion(), true, nil
}

func claimCount(shards []map[string]bool) int {
	n := 0
	for _, shard := range shards {
		n += len(shard)
	}
	return n
}

// fenceDigest is a digest of a RemovalFence's spec.
func fenceDigest(spec fencev1alpha1.RemovalFenceSpec) (string, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// list reads the RemovalFences of the operator's namespace, as name -> resourceVersion. Before
// the CRD is installed there are none.
func (f *removalFence) list(ctx context.Context) (map[string]string, error) {
	list, err := f.fenceMeta.List(ctx, metav1.ListOptions{LabelSelector: efs.RemovalFenceLabel})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the RemovalFences of namespace %s: %w", f.namespace, err)
	}
	current := map[string]string{}
	for _, item := range list.Items {
		current[item.Name] = item.ResourceVersion
	}
	return current, nil
}

func (f *removalFence) delete(ctx context.Context, name string) error {
	err := f.fences.Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting RemovalFence %s/%s: %w", f.namespace, name, err)
	}
	delete(f.written, name)
	return nil
}

// lower takes the fence down: new uses of EFS volumes are admitted again. The head goes first,
// so that no part of the fence is left that names a revision.
func (f *removalFence) lower(ctx context.Context) error {
	f.upSince, f.revision = time.Time{}, ""
	if f.down {
		return nil
	}
	current, err := f.list(ctx)
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(current))
	if i := slices.Index(names, efs.RemovalFence); i > 0 {
		names = append([]string{efs.RemovalFence}, slices.Delete(names, i, i+1)...)
	}
	for _, name := range names {
		if err := f.delete(ctx, name); err != nil {
			return err
		}
	}
	f.down = true
	return nil
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
		klog.Infof("removal fence: enforced under revision %s, %s after it was written", f.revision, f.upSince.Sub(f.writtenAt).Round(time.Millisecond))
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
