package operator_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator/fencecrd"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// The namespace the operator runs in, as OperatorHub suggests.
const ns = "openshift-cluster-csi-drivers"

// harness is a test bed stack with the OpenShift singletons, the operator's namespace and a
// kube client.
type harness struct {
	t     testing.TB
	stack *testbed.Stack
	c     client.Client
	kube  kubernetes.Interface
}

func newHarness(t testing.TB, level testbed.Level, opts testbed.OpenShiftOptions) *harness {
	t.Helper()
	s := testutil.StartTestBed(t, level)
	ctx, cancel := progress.WithStall(context.Background(), time.Minute)
	defer cancel()
	if err := s.InstallOpenShift(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// As OLM would from the bundle: the removal fence's parameters.
	fenceCRD, err := testbed.DecodeCRD(fencecrd.RemovalFences)
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.InstallCRDs(ctx, s.Client, fenceCRD); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, stack: s, c: s.Client, kube: kubernetes.NewForConfigOrDie(s.Config)}
}

// runOperator runs the operator in this process, as the cluster admin, until the test ends.
func (h *harness) runOperator() { h.runOperatorAs(h.stack.Config) }

// runOperatorAs runs the operator in this process with the given credentials.
func (h *harness) runOperatorAs(config *rest.Config) {
	h.t.Helper()
	fixture.RunOperator(h.t, config, ns)
}

func (h *harness) createCR(ctx context.Context, name string, state operatorv1.ManagementState) {
	h.t.Helper()
	cr := &operatorv1.ClusterCSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: operatorv1.ClusterCSIDriverSpec{OperatorSpec: operatorv1.OperatorSpec{
			ManagementState: state, LogLevel: operatorv1.Normal, OperatorLogLevel: operatorv1.Normal,
		}},
	}
	if err := h.c.Create(ctx, cr); err != nil {
		h.t.Fatalf("creating ClusterCSIDriver %s: %v", name, err)
	}
}

func (h *harness) cr(ctx context.Context) (*operatorv1.ClusterCSIDriver, error) {
	var cr operatorv1.ClusterCSIDriver
	err := h.c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &cr)
	return &cr, err
}

func (h *harness) setState(ctx context.Context, state operatorv1.ManagementState) {
	h.t.Helper()
	if err := h.patchState(ctx, state); err != nil {
		h.t.Fatal(err)
	}
}

// patchState sets the CR's management state with a merge patch, which the operator's own writes
// cannot make conflict.
func (h *harness) patchState(ctx context.Context, state operatorv1.ManagementState) error {
	cr, err := h.cr(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(cr.DeepCopy())
	cr.Spec.ManagementState = state
	return h.c.Patch(ctx, cr, patch)
}

var eventually = testutil.Eventually

// observed checks that the operator has taken in the current generation of ClusterCSIDriver
// name: its status.observedGeneration, which the operator writes after deciding what the
// managementState and a deletion mean for the driver, has caught up with metadata.generation.
func (h *harness) observed(name string) func(context.Context) error {
	return func(ctx context.Context) error {
		var cr operatorv1.ClusterCSIDriver
		if err := h.c.Get(ctx, client.ObjectKey{Name: name}, &cr); err != nil {
			return err
		}
		if cr.Status.ObservedGeneration < cr.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", cr.Status.ObservedGeneration, cr.Generation)
		}
		return nil
	}
}

// eventSeen checks that the operator recorded an event with this reason in its namespace.
func (h *harness) eventSeen(reason string) func(context.Context) error {
	return func(ctx context.Context) error {
		var events corev1.EventList
		if err := h.c.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event among %d", reason, len(events.Items))
	}
}

// conditionIs checks a condition of the CR.
func (h *harness) conditionIs(conditionType string, status operatorv1.ConditionStatus) func(context.Context) error {
	return h.conditionWith(conditionType, status, "")
}

// conditionWith checks a condition of the CR, and its reason unless reason is "".
func (h *harness) conditionWith(conditionType string, status operatorv1.ConditionStatus, reason string) func(context.Context) error {
	return func(ctx context.Context) error {
		cr, err := h.cr(ctx)
		if err != nil {
			return err
		}
		for _, c := range cr.Status.Conditions {
			if c.Type == conditionType {
				if c.Status == status && (reason == "" || c.Reason == reason) {
					return nil
				}
				return fmt.Errorf("%s=%s reason=%s message=%q", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		return fmt.Errorf("no condition %s among %d", conditionType, len(cr.Status.Conditions))
	}
}

// exists checks that an object exists.
func (h *harness) exists(obj client.Object) func(context.Context) error {
	return func(ctx context.Context) error { return h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj) }
}

// gone checks that an object does not exist.
func (h *harness) gone(obj client.Object) func(context.Context) error {
	return func(ctx context.Context) error {
		err := h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%T %s still exists", obj, obj.GetName())
	}
}

// available checks that a Deployment or DaemonSet is available with its current template.
func (h *harness) available(obj client.Object) func(context.Context) error {
	return fixture.Available(h.c, obj)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// workloadVersion is one version of an operand Deployment or DaemonSet as the API server stored it.
type workloadVersion struct {
	kind, name, resourceVersion string
	pod                         corev1.PodSpec
}

// recordWorkloads watches the operator's namespace for Deployments and DaemonSets from now on.
// The returned function stops the watches and returns every version written, so a test can
// check what the cluster was given at each step, not only how it ended.
func (h *harness) recordWorkloads(ctx context.Context) func() []workloadVersion {
	h.t.Helper()
	deployments, err := h.kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
	must(h.t, err)
	daemonSets, err := h.kube.AppsV1().DaemonSets(ns).Watch(ctx, metav1.ListOptions{})
	must(h.t, err)
	var (
		mu       sync.Mutex
		versions []workloadVersion
		wg       sync.WaitGroup
	)
	for _, w := range []watch.Interface{deployments, daemonSets} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				var v workloadVersion
				switch obj := ev.Object.(type) {
				case *appsv1.Deployment:
					v = workloadVersion{"Deployment", obj.Name, obj.ResourceVersion, obj.Spec.Template.Spec}
				case *appsv1.DaemonSet:
					v = workloadVersion{"DaemonSet", obj.Name, obj.ResourceVersion, obj.Spec.Template.Spec}
				default:
					continue
				}
				mu.Lock()
				versions = append(versions, v)
				mu.Unlock()
			}
		}()
	}
	return func() []workloadVersion {
		deployments.Stop()
		daemonSets.Stop()
		wg.Wait()
		return versions
	}
}
