package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// Options tune the controller.
type Options struct {
	// Workers reconcile SharedVolumes made since the controller started, in parallel, and a
	// quarter of them while new SharedVolumes keep arriving (Reconciler.admit). Each has at most
	// one request to the API server in flight, so Workers also bounds the controller's load on
	// it.
	Workers int
	// BacklogWorkers reconcile, in parallel, the SharedVolumes made before the controller
	// started: those made while no operator ran (an upgrade, a restart, a standby waiting for
	// its lease).
	BacklogWorkers int
	// OperatorNamespace and CSV name the ClusterServiceVersion OLM installed the operator from.
	// When both are set, new SharedVolumes get their finalizer from the API server as it admits
	// them, for as long as that CSV is installed (finalizerpolicy.go).
	OperatorNamespace, CSV string
}

// DefaultOptions were measured with BenchmarkSharedVolumes (BENCHMARKS.md). A new
// SharedVolume's reconcile makes two requests one after another (the volume, then the claim), so
// the workers bound how fast SharedVolumes become pairs. But the binder binds some 18 claims a
// second, one request at a time, and every SharedVolume waits for it: with 96 workers for an app
// team's new SharedVolumes, the operator's requests crowded the binder's out (16.7-16.9 binds a
// second against 17.0-17.2), and the app team's 1,000 were all Ready some 3% later. A backlog
// waiting when the controller starts finds the binder idle, and has waited already: it gets 96,
// which caught up with 1,000 at 1.4 times the pairs a second of 32. While an app team's creates
// are still in flight they slow the binder too, and the binder, held to its client's rate limit
// once they end, never makes that time up. With 8 workers while SharedVolumes keep arriving, the
// raw client's pairs were all bound in 0.955-0.975 of the time the 1,000 took to be Ready,
// against 0.944-0.947 with 32 throughout.
var DefaultOptions = Options{Workers: 32, BacklogWorkers: 96}

// setLogger hands controller-runtime klog's logger once per process: the logger is the process's,
// and tests run several operators side by side in one process, whose concurrent SetLogger calls
// race inside controller-runtime.
var setLogger sync.Once

// Run runs the SharedVolume controller until ctx ends. It waits for the SharedVolume API: the
// CRD comes with the operator's bundle, but an operator started by hand may come first.
func Run(ctx context.Context, config *rest.Config, component string, opts Options) error {
	setLogger.Do(func() { ctrl.SetLogger(klog.NewKlogr()) })
	if err := waitForAPI(ctx, config); err != nil {
		return err
	}
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	config = rest.CopyConfig(config)
	if opts.OperatorNamespace != "" {
		kube, err := kubernetes.NewForConfig(config)
		if err != nil {
			return err
		}
		putUpFinalizerPolicy(ctx, kube, opts.OperatorNamespace, opts.CSV)
	}
	// No client-side token bucket. It protected the API server before API Priority and
	// Fairness, which every supported cluster runs: the server queues this ServiceAccount's
	// requests as a flow of their own in its priority level, so a burst from here waits its
	// fair turn and starves no one. What this controller can send is bounded here instead:
	// Workers requests in flight at most, and failed reconciles retried through
	// retryLimiter's overall rate. A bucket on top only added waiting: with one at 200 QPS,
	// 1,000 SharedVolumes needed 21.5 s to have their PVs and PVCs, without it 12.3 s
	// (BENCHMARKS.md). controller-runtime makes the same choice for the configs it loads.
	config.QPS = -1
	owned := labels.SelectorFromSet(labels.Set{efs.CommunityOwnedLabel: "true"})
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Only volumes labelled as a SharedVolume's are cached: the cluster may hold any number
		// of others. Every claim is, each reduced to its name and what says whose it is: a new
		// SharedVolume's claim name is checked there while the watch is seen current
		// (Reconciler.claimsCurrent), where it cost a read from the API server, one request of
		// three in each new SharedVolume's chain.
		Cache: cache.Options{
			// Nothing here reads managedFields: they were most of the cached bytes of every
			// object at 10,000 SharedVolumes. The SharedVolumes, PVs and PVCs, which the
			// operator's RSS grows with, have transforms of their own (cache.go).
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&corev1.PersistentVolume{}:           {Label: owned, Transform: slimVolume},
				&corev1.PersistentVolumeClaim{}:      {Transform: slimClaim},
				&sharedvolumev1alpha1.SharedVolume{}: {Transform: slimSharedVolume},
			}},
	})
	if err != nil {
		return fmt.Errorf("creating the SharedVolume controller: %w", err)
	}
	r := &Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorderFor(component)}
	if err := r.SetupWithManager(mgr, opts.Workers, opts.BacklogWorkers); err != nil {
		return err
	}
	go reportPhases(ctx, mgr.GetCache())
	return mgr.Start(ctx)
}

// NewScheme knows the Kubernetes types and SharedVolumes.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, sharedvolumev1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

func waitForAPI(ctx context.Context, config *rest.Config) error {
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	logged := false
	// Cancellation is not an error here: the caller stops with its context.
	_ = wait.PollUntilContextCancel(ctx, 10*time.Second, true, func(context.Context) (bool, error) {
		if _, err := disco.ServerResourcesForGroupVersion(sharedvolumev1alpha1.GroupVersion.String()); err == nil {
			return true, nil
		}
		if !logged {
			klog.Infof("waiting for the SharedVolume API %s to be served", sharedvolumev1alpha1.GroupVersion)
			logged = true
		}
		return false, nil
	})
	return nil
}
