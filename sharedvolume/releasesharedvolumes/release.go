// Package release is the `csi-olm efs release-sharedvolumes` verb: once the EFS operator is
// uninstalled for good, nothing removes the SharedVolume finalizer, and deleting a SharedVolume
// (or its CRD) would wait forever. This verb removes the finalizer from every SharedVolume
// (every one being deleted, unless --all), leaving their PVs and PVCs in place and working.
package releasesharedvolumes

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/output"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// Release removes the SharedVolume finalizer.
type Release struct {
	kube.ClusterOptions
	// All releases every SharedVolume, not only those being deleted.
	All bool
	// Output is text, json or yaml (a Plan).
	Output string
	Out    io.Writer
}

// Plan is what the verb releases, and did, as data.
type Plan struct {
	DryRun        bool     `json:"dryRun"`
	SharedVolumes []Target `json:"sharedVolumes"`
	// Released counts the SharedVolumes released.
	Released int `json:"released"`
}

// Target is a SharedVolume whose finalizer the verb releases; its PV and PVC stay.
type Target struct {
	Namespace             string `json:"namespace"`
	Name                  string `json:"name"`
	Finalizer             string `json:"finalizer"`
	PersistentVolume      string `json:"persistentVolume"`
	PersistentVolumeClaim string `json:"persistentVolumeClaim"`
}

// Run checks no controller runs, then releases the finalizers, and reports the plan.
func (r *Release) Run(ctx context.Context) error {
	if err := output.Check(r.Output); err != nil {
		return err
	}
	out, data := output.Text(r.Out, r.Output), output.Data(r.Output)
	plan := &Plan{DryRun: r.DryRun, SharedVolumes: []Target{}}
	err := r.run(ctx, out, plan)
	if data && (err == nil || plan.Released > 0) {
		if werr := output.Write(r.Out, r.Output, plan); werr != nil {
			return werr
		}
	}
	return err
}

func (r *Release) run(ctx context.Context, out io.Writer, plan *Plan) error {
	config, err := r.RESTConfig()
	if err != nil {
		return err
	}
	kubeClient, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	d, err := kube.FindDeployment(ctx, kubeClient, efs.OperatorDeployments...)
	if err != nil {
		return err
	}
	if d != nil {
		return fmt.Errorf("a SharedVolume controller still runs (Deployment %s/%s): it removes the finalizers itself, after removing each claim and volume", d.Namespace, d.Name)
	}
	// The verb reads and patches SharedVolumes only; it links none of the controller.
	scheme := runtime.NewScheme()
	if err := sharedvolumev1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	var list sharedvolumev1alpha1.SharedVolumeList
	if err := c.List(ctx, &list, client.InNamespace(r.Namespace)); err != nil {
		return fmt.Errorf("listing SharedVolumes: %w", err)
	}
	var targets []sharedvolumev1alpha1.SharedVolume
	for _, sv := range list.Items {
		if controllerutil.ContainsFinalizer(&sv, efs.SharedVolumeFinalizer) && (r.All || sv.DeletionTimestamp != nil) {
			targets = append(targets, sv)
		}
	}
	if len(targets) == 0 {
		fmt.Fprintln(out, "no SharedVolume to release")
		return nil
	}
	for _, sv := range targets {
		t := Target{Namespace: sv.Namespace, Name: sv.Name, Finalizer: efs.SharedVolumeFinalizer,
			PersistentVolume: efs.SharedVolumePV(sv.Namespace, sv.Name), PersistentVolumeClaim: efs.SharedVolumePVC(sv.Name)}
		plan.SharedVolumes = append(plan.SharedVolumes, t)
		fmt.Fprintf(out, "SharedVolume %s/%s: release %s (PV %s and PVC %s stay)\n", t.Namespace, t.Name, t.Finalizer, t.PersistentVolume, t.PersistentVolumeClaim)
	}
	if r.DryRun {
		fmt.Fprintln(out, "dry run: nothing changed; run with --confirm to release them")
		return nil
	}
	for i := range targets {
		sv := &targets[i]
		patch := client.MergeFromWithOptions(sv.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(sv, efs.SharedVolumeFinalizer)
		if err := c.Patch(ctx, sv, patch, client.FieldOwner("csi-olm")); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("releasing SharedVolume %s/%s (released %d of %d so far; run again to continue): %w", sv.Namespace, sv.Name, i, len(targets), err)
		}
		plan.Released++
	}
	fmt.Fprintf(out, "released %d SharedVolumes\n", len(targets))
	return nil
}
