package operator

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podWatch watches the pods that may use a volume while, and only while, a removal is asked
// for: the removal then proceeds the moment the last pod using an EFS volume is gone, and the
// operator holds no pod in memory the rest of the time, whatever the cluster runs.
//
// It watches every namespace: the claims bound to EFS volumes may be in any of them, and one
// watch costs the API server less than one per namespace. Finished pods (Succeeded, Failed) are
// left out by a field selector, as the removal ignores them, and the cache keeps of each pod only
// its namespace, name and the claims it uses.
type podWatch struct {
	kube kubernetes.Interface
	// changed is called on every pod event: the lifecycle looks again.
	changed func()

	mu       sync.Mutex
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
}

// unfinishedPods are the pods the removal waits for.
var unfinishedPods = fields.AndSelectors(
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
).String()

// follow starts the watch when on is true and it is not running, and stops it when on is false.
func (w *podWatch) follow(ctx context.Context, on bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case on && w.informer == nil:
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				opts.FieldSelector = unfinishedPods
				return w.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.FieldSelector = unfinishedPods
				return w.kube.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
			},
		}
		informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if err := informer.SetTransform(claimsOnly); err != nil {
			return fmt.Errorf("starting the pod watch: %w", err)
		}
		// A pod without a claim cannot hold the removal back, coming or going: most pods of a
		// busy cluster then cost no look.
		changed := func(obj any) {
			if pod, ok := obj.(*corev1.Pod); !ok || len(pod.Spec.Volumes) > 0 {
				w.changed()
			}
		}
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: changed, DeleteFunc: changed, UpdateFunc: func(_, obj any) { changed(obj) },
		}); err != nil {
			return fmt.Errorf("starting the pod watch: %w", err)
		}
		// The watch outlives the sync that starts it: it runs until the removal ends.
		watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		go informer.RunWithContext(watchCtx)
		w.informer, w.cancel = informer, cancel
	case !on && w.informer != nil:
		w.cancel()
		w.informer, w.cancel = nil, nil
	}
	return nil
}

// podsIn returns the unfinished pods of namespace ns, once the watch has listed them all.
func (w *podWatch) podsIn(ctx context.Context, ns string) ([]*corev1.Pod, error) {
	w.mu.Lock()
	informer := w.informer
	w.mu.Unlock()
	if informer == nil {
		return nil, fmt.Errorf("the pod watch is not running")
	}
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("listing the pods: %w", ctx.Err())
	}
	objs, err := informer.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, len(objs))
	for i, obj := range objs {
		pods[i] = obj.(*corev1.Pod)
	}
	return pods, nil
}

// claimsOnly is the pod watch's transform: it keeps of a pod its namespace, name and phase and,
// of its volumes, those of a claim, so that a removal on a cluster of many pods costs the
// operator little memory.
func claimsOnly(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	kept := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, ResourceVersion: pod.ResourceVersion},
		Status:     corev1.PodStatus{Phase: pod.Status.Phase},
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			kept.Spec.Volumes = append(kept.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PersistentVolumeClaim.ClaimName},
			}})
		case v.Ephemeral != nil:
			kept.Spec.Volumes = append(kept.Spec.Volumes, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{
				Ephemeral: &corev1.EphemeralVolumeSource{},
			}})
		}
	}
	return kept, nil
}
