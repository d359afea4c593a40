package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/clustercorpus"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestClusterCSIDriverCorpus runs the ClusterCSIDriver cases of the bad-input corpus
// (test/badinput/README.md) against the operator and the CRD OpenShift ships: CRs the API
// server refuses, CRs the operator must refuse or ignore, and edits during an uninstall. The
// CR is a singleton, so the cases run one after the other, each leaving no CR, no volume and no
// driver behind.
func TestClusterCSIDriverCorpus(t *testing.T) {
	fixture.SetOperatorEnv(t)
	// The full stack: the controller-manager releases the pv-protection finalizer of the volumes
	// that block an uninstall.
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	h.runOperator()
	example, err := clustercorpus.ShippedExample("..", "aws-efs-operator", "ClusterCSIDriver")
	must(t, err)
	s := &ccdSurface{h: h}
	clustercorpus.Run(t, "../test/badinput/clustercsidriver", "ccd-", s, clustercorpus.Options{
		Client: h.c, Example: example, Timeout: 90 * time.Second, Cleanup: s.cleanup,
	})
	// library-go's controllers crash the process on a panic; the SharedVolume controller the
	// operator runs recovers and counts it.
	if n, err := clustercorpus.ReconcilePanics(); err != nil || n > 0 {
		t.Errorf("the SharedVolume controller panicked %v times (%v)", n, err)
	}
}

// ccdSurface knows a ClusterCSIDriver case's objects: the operator's CR (cr), the driver it
// installs (controller, node, csidriver) and the case's namespace.
type ccdSurface struct{ h *harness }

func (s *ccdSurface) Aliases(_ *clustercorpus.Case, caseNS string) map[string]clustercorpus.Ref {
	return map[string]clustercorpus.Ref{
		"cr":         {GVK: clustercorpus.Kind("ClusterCSIDriver"), Name: efs.CRName},
		"controller": {GVK: clustercorpus.Kind("Deployment"), Namespace: ns, Name: efs.ControllerDeployment},
		"node":       {GVK: clustercorpus.Kind("DaemonSet"), Namespace: ns, Name: efs.NodeDaemonSet},
		"csidriver":  {GVK: clustercorpus.Kind("CSIDriver"), Name: efs.DriverName},
		"namespace":  {GVK: clustercorpus.Kind("Namespace"), Name: caseNS},
	}
}

// Ready: the operator has taken in the CR, the driver is deployed and available, and the
// operator has settled, so that a step that follows races with no write still under way.
func (s *ccdSurface) Ready(ctx context.Context, _ *clustercorpus.Case, _ string) error {
	if err := eventually(ctx, "the operator to take in the CR", s.h.observed(efs.CRName)); err != nil {
		return err
	}
	for _, obj := range operands()[:2] {
		if err := eventually(ctx, "the driver's "+obj.GetName()+" to be available", s.h.available(obj)); err != nil {
			return err
		}
	}
	if err := eventually(ctx, "the CSIDriver", s.h.exists(&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: efs.DriverName}})); err != nil {
		return err
	}
	return s.settle(ctx)
}

// Said: the conditions of the operator's CR, and "generation observed" once the operator has taken in the
// CR's generation (the config observer writes the spec too, so a case cannot know the number);
// and the events of the operator's namespace.
func (s *ccdSurface) Said(ctx context.Context, _ *clustercorpus.Case, _ string, since time.Time) (string, string, error) {
	status := ""
	if cr, err := s.h.cr(ctx); err == nil {
		status = clustercorpus.Conditions(cr.Status.Conditions, func(c operatorv1.OperatorCondition) (string, string, string, string) {
			return c.Type, string(c.Status), c.Reason, c.Message
		})
		if cr.Status.ObservedGeneration >= cr.Generation {
			status += "\ngeneration observed"
		} else {
			status += fmt.Sprintf("\ngeneration %d not yet observed (observedGeneration %d)", cr.Generation, cr.Status.ObservedGeneration)
		}
	} else if client.IgnoreNotFound(err) != nil {
		return "", "", err
	}
	events, err := clustercorpus.Events(ctx, s.h.c, ns, since, func(corev1.ObjectReference) bool { return true })
	return status, events, err
}

// Scope: every ClusterCSIDriver, CSIDriver and PersistentVolume, and the Deployments and
// DaemonSets of the operator's namespace: a second CR must install nothing, not even once more.
func (s *ccdSurface) Scope(ctx context.Context, _ string) ([]*unstructured.Unstructured, error) {
	var scope []*unstructured.Unstructured
	for _, k := range []struct{ kind, namespace string }{
		{"ClusterCSIDriver", ""}, {"CSIDriver", ""}, {"PersistentVolume", ""}, {"Deployment", ns}, {"DaemonSet", ns},
	} {
		objs, err := clustercorpus.List(ctx, s.h.c, clustercorpus.Kind(k.kind), k.namespace)
		if err != nil {
			return nil, err
		}
		scope = append(scope, objs...)
	}
	return scope, nil
}

// Check: the operator never touched another driver's CR, installed the driver at most once, and
// its CR, when there is one, has settled: the operator does not keep rewriting it.
func (s *ccdSurface) Check(ctx context.Context, _ *clustercorpus.Case, _ string) []string {
	var problems []string
	var crs operatorv1.ClusterCSIDriverList
	if err := s.h.c.List(ctx, &crs); err != nil {
		return []string{err.Error()}
	}
	for _, cr := range crs.Items {
		if cr.Name != efs.CRName && (len(cr.Finalizers) > 0 || len(cr.Status.Conditions) > 0) {
			problems = append(problems, fmt.Sprintf("the operator touched ClusterCSIDriver %s: finalizers %v, %d conditions", cr.Name, cr.Finalizers, len(cr.Status.Conditions)))
		}
	}
	for _, kind := range []string{"Deployment", "DaemonSet"} {
		if objs, err := clustercorpus.List(ctx, s.h.c, clustercorpus.Kind(kind), ns); err != nil || len(objs) > 1 {
			problems = append(problems, fmt.Sprintf("%d %ss in %s (%v), want at most the driver's one", len(objs), kind, ns, err))
		}
	}
	if cr, err := s.h.cr(ctx); err == nil && cr.DeletionTimestamp == nil {
		if err := s.settle(ctx); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// settle waits until the operator has settled: 2 s without a write to its CR or to the spec of
// the driver's Deployment and DaemonSet, within 30 s. Its controllers may still be writing a
// moment after the driver became available or a condition appeared (on a loaded machine,
// seconds); an operator that loops never settles.
func (s *ccdSurface) settle(ctx context.Context) error {
	versions := func() string {
		v := ""
		if cr, err := s.h.cr(ctx); err == nil {
			v = cr.ResourceVersion
		}
		for _, obj := range operands()[:2] {
			if err := s.h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil {
				v += fmt.Sprintf(" %s/%d", obj.GetName(), obj.GetGeneration())
			}
		}
		return v
	}
	var seen []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		before := versions()
		time.Sleep(2 * time.Second)
		after := versions()
		if after == before {
			return nil
		}
		seen = append(seen, after)
	}
	return fmt.Errorf("the operator keeps writing: 30 s without 2 quiet seconds; CR resourceVersion and workload generations %v", seen)
}

// cleanup leaves the next case no volume, no ClusterCSIDriver and no driver.
func (s *ccdSurface) cleanup(ctx context.Context, t *testing.T, _ string) {
	ctx, cancel := progress.WithStall(ctx, convergeStall)
	defer cancel()
	for _, kind := range []string{"PersistentVolume", "ClusterCSIDriver"} {
		objs, err := clustercorpus.List(ctx, s.h.c, clustercorpus.Kind(kind), "")
		must(t, err)
		for _, o := range objs {
			must(t, client.IgnoreNotFound(s.h.c.Delete(ctx, o)))
		}
	}
	must(t, eventually(ctx, "a clean cluster for the next case", func(ctx context.Context) error {
		for _, k := range []struct{ kind, namespace string }{{"PersistentVolume", ""}, {"ClusterCSIDriver", ""}, {"Deployment", ns}, {"DaemonSet", ns}, {"CSIDriver", ""}} {
			objs, err := clustercorpus.List(ctx, s.h.c, clustercorpus.Kind(k.kind), k.namespace)
			if err != nil {
				return err
			}
			if len(objs) > 0 {
				return fmt.Errorf("%d %ss left, %s among them", len(objs), k.kind, objs[0].GetName())
			}
		}
		return nil
	}))
}
