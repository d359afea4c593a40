// Package release is the `csi-olm efs release-finalizer` verb: it lets ClusterCSIDriver
// efs.csi.aws.com go once the operator that put its finalizers there is gone for good.
package releasefinalizer

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/output"
)

// Release removes the operator's finalizers from the CR.
type Release struct {
	kube.ClusterOptions
	// Output is text, json or yaml (a Plan).
	Output string
	Out    io.Writer
}

// Plan is what the verb releases, and did, as data.
type Plan struct {
	DryRun bool `json:"dryRun"`
	// Exists says whether the ClusterCSIDriver exists.
	Exists bool `json:"exists"`
	// Finalizers are the EFS operator's finalizers the ClusterCSIDriver carries.
	Finalizers []string `json:"finalizers"`
	// Released counts the finalizers released; Deleted says the ClusterCSIDriver went with them.
	Released int  `json:"released"`
	Deleted  bool `json:"deleted"`
}

// Run checks the operator is gone and releases the finalizers, and reports the plan.
func (r *Release) Run(ctx context.Context) error {
	if err := output.Check(r.Output); err != nil {
		return err
	}
	out, data := output.Text(r.Out, r.Output), output.Data(r.Output)
	plan := &Plan{DryRun: r.DryRun, Finalizers: []string{}}
	err := r.run(ctx, out, plan)
	if data && err == nil {
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
	opClient, err := operatorclient.NewForConfig(config)
	if err != nil {
		return err
	}
	cr, err := opClient.OperatorV1().ClusterCSIDrivers().Get(ctx, efs.CRName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(out, "ClusterCSIDriver %s does not exist: nothing to release\n", efs.CRName)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ClusterCSIDriver %s: %w", efs.CRName, err)
	}
	plan.Exists = true
	var ours, kept []string
	for _, f := range cr.Finalizers {
		if strings.HasPrefix(f, efs.FinalizerPrefix) {
			ours = append(ours, f)
		} else {
			kept = append(kept, f)
		}
	}
	if len(ours) == 0 {
		fmt.Fprintf(out, "ClusterCSIDriver %s carries no finalizer of the EFS operator: nothing to release\n", efs.CRName)
		return nil
	}
	d, err := kube.FindDeployment(ctx, kubeClient, efs.OperatorDeployments...)
	if err != nil {
		return err
	}
	if d != nil {
		// A community operator does not know the CR, but while it runs it still owns a driver that
		// the supported operator's uninstall would have to account for: both verbs that stand in
		// for an uninstalled operator refuse while any EFS operator runs.
		return fmt.Errorf("an EFS operator is still installed (Deployment %s/%s): the supported operator removes its finalizers itself "+
			"(deleting the ClusterCSIDriver removes the driver once no pod uses an EFS volume); uninstall it first", d.Namespace, d.Name)
	}
	plan.Finalizers = append(plan.Finalizers, ours...)
	fmt.Fprintf(out, "no EFS operator is running; ClusterCSIDriver %s carries its finalizers:\n", efs.CRName)
	for _, f := range ours {
		fmt.Fprintf(out, "  - %s\n", f)
	}
	fmt.Fprintln(out, "the driver's objects are left in place and keep serving every EFS volume")
	if r.DryRun {
		fmt.Fprintln(out, "dry run: nothing changed; run with --confirm to release them")
		return nil
	}
	return r.release(ctx, out, plan, opClient, cr, kept)
}

func (r *Release) release(ctx context.Context, out io.Writer, plan *Plan, client operatorclient.Interface, cr *operatorv1.ClusterCSIDriver, kept []string) error {
	updated := cr.DeepCopy()
	updated.Finalizers = slices.Clip(kept)
	// The update carries the resourceVersion read above: if the CR changed meanwhile, nothing is
	// written and the verb can simply be run again.
	if _, err := client.OperatorV1().ClusterCSIDrivers().Update(ctx, updated, metav1.UpdateOptions{FieldManager: "csi-olm"}); err != nil {
		return fmt.Errorf("releasing the finalizers of ClusterCSIDriver %s: %w", efs.CRName, err)
	}
	plan.Released = len(cr.Finalizers) - len(kept)
	state := "stays"
	if cr.DeletionTimestamp != nil && len(kept) == 0 {
		state, plan.Deleted = "is deleted now", true
	}
	fmt.Fprintf(out, "released %d finalizers; ClusterCSIDriver %s %s\n", len(cr.Finalizers)-len(kept), efs.CRName, state)
	return nil
}
