package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

var (
	// Phases counts SharedVolumes per phase.
	Phases = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "aws_efs_sharedvolumes",
		Help:           "Number of SharedVolumes per phase.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"phase"})
	// ReconcileErrors counts failed reconciles of SharedVolumes.
	ReconcileErrors = metrics.NewCounter(&metrics.CounterOpts{
		Name:           "aws_efs_sharedvolume_reconcile_errors_total",
		Help:           "Number of SharedVolume reconciles that returned an error.",
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(Phases, ReconcileErrors)
}

// reportPhases recounts the SharedVolumes per phase from the cache every few seconds: a count
// kept up to date by each reconcile would drift whenever an update is lost. It reads the
// informer's own objects, without copying them: a list from the cache copies each, 10,000 of
// them every 5 s at scale.
func reportPhases(ctx context.Context, c cache.Cache) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		informer, err := c.GetInformer(ctx, &sharedvolumev1alpha1.SharedVolume{})
		if err != nil || !informer.HasSynced() {
			klog.V(4).Infof("counting SharedVolumes: the cache is not ready (%v)", err)
			return
		}
		store, ok := informer.(toolscache.SharedIndexInformer)
		if !ok {
			klog.V(4).Infof("counting SharedVolumes: the cache's informer is a %T", informer)
			return
		}
		counts := map[sharedvolumev1alpha1.SharedVolumePhase]int{}
		for _, obj := range store.GetStore().List() {
			if sv, ok := obj.(*sharedvolumev1alpha1.SharedVolume); ok {
				counts[sv.Status.Phase]++
			}
		}
		for _, phase := range []sharedvolumev1alpha1.SharedVolumePhase{"", sharedvolumev1alpha1.SharedVolumePending, sharedvolumev1alpha1.SharedVolumeReady, sharedvolumev1alpha1.SharedVolumeDeleting, sharedvolumev1alpha1.SharedVolumeFailed} {
			label := string(phase)
			if label == "" {
				label = "New"
			}
			Phases.WithLabelValues(label).Set(float64(counts[phase]))
		}
	}, 5*time.Second)
}
