package clustercorpus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Surface is what a runner knows of the objects of its cases.
type Surface interface {
	// Aliases names the objects of a case for its steps, changes and expect: "pv" for the
	// PersistentVolume of the case's SharedVolume, say.
	Aliases(c *Case, ns string) map[string]Ref
	// Ready waits until the case's created object is ready for its steps.
	Ready(ctx context.Context, c *Case, ns string) error
	// Said renders what the cluster says about the case now, in want.status and want.events
	// form; events older than since are left out.
	Said(ctx context.Context, c *Case, ns string, since time.Time) (status, events string, err error)
	// Scope lists the objects a case must leave as they were unless it names them in changes.
	Scope(ctx context.Context, ns string) ([]*unstructured.Unstructured, error)
	// Check returns what is wrong with the surface's invariants at the end of a case.
	Check(ctx context.Context, c *Case, ns string) []string
}

// Options are what a runner gives Run.
type Options struct {
	// Client acts as the cluster admin.
	Client client.Client
	// Example is the shipped object "base: example" starts from.
	Example map[string]any
	// Timeout bounds each case.
	Timeout time.Duration
	// Cleanup, when set, runs after every case, to leave the next one a clean cluster.
	Cleanup func(ctx context.Context, t *testing.T, ns string)
}

// Run runs every case below dir, in name order, one after the other on one test bed, each in
// its own namespace (prefix + the case's name); then checks that no case's objects changed while
// the later cases ran.
func Run(t *testing.T, dir, prefix string, s Surface, opts Options) {
	nsOf := func(name string) string { return Namespace(prefix, name) }
	cases, err := Load(dir, nsOf)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("no cases in %s", dir)
	}
	r := &runner{s: s, opts: opts, c: opts.Client}
	ended := map[string]map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		t.Run(name, func(t *testing.T) {
			ended[name] = r.run(t, cases[name], nsOf(name))
		})
	}
	t.Logf("%d cases", len(cases))
	// Every case's objects were settled when it ended: a change since is a late write.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range slices.Sorted(maps.Keys(ended)) {
		if ended[name] == nil {
			continue
		}
		now, err := r.snapshot(ctx, cases[name], nsOf(name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for _, p := range diff(ended[name], now) {
			t.Errorf("%s: after the case ended, %s", name, p)
		}
		for _, p := range s.Check(ctx, cases[name], nsOf(name)) {
			t.Errorf("%s: after the case ended, %s", name, p)
		}
	}
}

type runner struct {
	s    Surface
	opts Options
	c    client.Client
}

// run runs one case and returns its scope as it ended, for the final check; nil when the case
// failed or cleaned up after itself.
func (r *runner) run(t *testing.T, c *Case, ns string) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
	defer cancel()
	// Event times have a resolution of a second.
	start := time.Now().Add(-time.Second)
	if r.opts.Cleanup != nil {
		defer r.opts.Cleanup(context.Background(), t, ns)
	}
	t.Logf("%s", c.About)
	r.setup(ctx, t, c, ns)
	aliases := r.s.Aliases(c, ns)

	// before is the scope just before the case's first bad action: the refused create, the
	// create the controller must refuse, or the first step.
	var before map[string]string
	takeBefore := func() {
		var err error
		if before, err = r.snapshot(ctx, c, ns); err != nil {
			t.Fatal(err)
		}
	}
	var refusals []string
	if c.Create != nil {
		if c.createRefused() || len(c.Steps) == 0 {
			takeBefore()
		}
		if err := r.do(ctx, Step{Create: c.Create, Refused: c.createRefused()}, aliases, ns, &refusals); err != nil {
			t.Fatalf("create: %v", err)
		}
		if c.Ready {
			if err := r.s.Ready(ctx, c, ns); err != nil {
				t.Fatalf("before the steps: %v", err)
			}
		}
	}
	if before == nil {
		takeBefore()
	}
	for i, step := range c.Steps {
		if err := r.do(ctx, step, aliases, ns, &refusals); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		if a := step.Await; a != nil {
			if err := r.await(ctx, c, ns, start, before, &Case{Want: Want{Status: a.Status, Events: a.Events}, Expect: a.Expect}, aliases); err != nil {
				t.Fatalf("after step %d: %v", i+1, err)
			}
		}
	}
	said := strings.Join(refusals, "\n")
	if len(c.Want.Error) > 0 {
		t.Logf("the API server said: %s", said)
	}
	for _, w := range c.Want.Error {
		if !strings.Contains(said, w) {
			t.Errorf("the API server's refusal lacks %q", w)
		}
	}
	if err := r.await(ctx, c, ns, start, before, &Case{Want: Want{Status: c.Want.Status, Events: c.Want.Events}, Expect: c.Expect, Changes: c.Changes}, aliases); err != nil {
		t.Error(err)
	}
	if t.Failed() {
		return nil
	}
	after, err := r.snapshot(ctx, c, ns)
	if err != nil {
		t.Fatal(err)
	}
	allowed := r.allowed(c, aliases, ns)
	for _, p := range diff(before, after) {
		key, what, _ := strings.Cut(p, ": ")
		if !slices.Contains(allowed[key], what) {
			t.Errorf("%s", p)
		}
	}
	for _, p := range r.s.Check(ctx, c, ns) {
		t.Errorf("%s", p)
	}
	if r.opts.Cleanup != nil || t.Failed() {
		return nil
	}
	return after
}

// setup creates the case's namespace and objects.
func (r *runner) setup(ctx context.Context, t *testing.T, c *Case, ns string) {
	t.Helper()
	nsObj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}
	var objects []map[string]any
	for _, o := range c.Objects {
		if u := (&unstructured.Unstructured{Object: o}); u.GetKind() == "Namespace" && u.GetName() == ns {
			nsObj = o
		} else {
			objects = append(objects, o)
		}
	}
	for _, o := range append([]map[string]any{nsObj}, objects...) {
		u := (&unstructured.Unstructured{Object: o}).DeepCopy()
		r.defaultNamespace(u, ns)
		if err := r.c.Create(ctx, u); err != nil {
			t.Fatalf("creating %s: %v", RefOf(u), err)
		}
	}
}

func (r *runner) defaultNamespace(u *unstructured.Unstructured, ns string) {
	if u.GetNamespace() != "" {
		return
	}
	if namespaced, err := r.c.IsObjectNamespaced(u); err == nil && namespaced {
		u.SetNamespace(ns)
	}
}

// resolve finds the object a step, a change or an expect names: an alias, or "<Kind>/<name>",
// in the case's namespace when the kind is namespaced.
func (r *runner) resolve(name string, aliases map[string]Ref, ns string) (Ref, error) {
	if ref, ok := aliases[name]; ok {
		return ref, nil
	}
	kind, objName, ok := strings.Cut(name, "/")
	gvk, known := kinds[kind]
	if !ok || !known {
		return Ref{}, fmt.Errorf("%q is neither an alias (%s) nor <Kind>/<name> of a known kind", name, strings.Join(slices.Sorted(maps.Keys(aliases)), ", "))
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(objName)
	r.defaultNamespace(u, ns)
	return RefOf(u), nil
}

// do does one step. A refusal it expects is appended to refusals, after checking that the
// object is as it was.
func (r *runner) do(ctx context.Context, s Step, aliases map[string]Ref, ns string, refusals *[]string) error {
	u := &unstructured.Unstructured{}
	var action func() error
	if s.Create != nil {
		built, err := s.Create.Build(r.opts.Example)
		if err != nil {
			return err
		}
		u = built
		r.defaultNamespace(u, ns)
		action = func() error { return r.c.Create(ctx, u) }
	} else {
		name := s.Patch + s.Delete
		ref, err := r.resolve(name, aliases, ns)
		if err != nil {
			return err
		}
		u.SetGroupVersionKind(ref.GVK)
		u.SetNamespace(ref.Namespace)
		u.SetName(ref.Name)
		action = func() error { return r.c.Delete(ctx, u) }
		if s.Patch != "" {
			patchType, body := types.MergePatchType, any(s.Merge)
			if s.JSON != nil {
				patchType, body = types.JSONPatchType, s.JSON
			}
			raw, err := json.Marshal(body)
			if err != nil {
				return err
			}
			action = func() error { return r.c.Patch(ctx, u, client.RawPatch(patchType, raw)) }
			if s.Status {
				action = func() error { return r.c.Status().Patch(ctx, u, client.RawPatch(patchType, raw)) }
			}
		}
	}
	target := RefOf(u)
	if !s.Refused {
		if err := action(); err != nil {
			return fmt.Errorf("%s: %w", target, err)
		}
		return nil
	}
	was, err := stampOf(ctx, r.c, target)
	if err != nil {
		return err
	}
	if err := action(); err == nil {
		return fmt.Errorf("the API server accepted it: %s", target)
	} else {
		*refusals = append(*refusals, err.Error())
	}
	now, err := stampOf(ctx, r.c, target)
	if err != nil {
		return err
	}
	if now != was {
		return fmt.Errorf("%s changed although the API server refused the change", target)
	}
	return nil
}

// await waits until the surface says every line of want's Want, want's Expect holds and its
// Changes happened.
func (r *runner) await(ctx context.Context, c *Case, ns string, since time.Time, before map[string]string, want *Case, aliases map[string]Ref) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = r.check(ctx, c, ns, since, before, want, aliases)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", err, last)
	}
	return nil
}

func (r *runner) check(ctx context.Context, c *Case, ns string, since time.Time, before map[string]string, want *Case, aliases map[string]Ref) error {
	var problems []string
	if len(want.Want.Status)+len(want.Want.Events) > 0 {
		status, events, err := r.s.Said(ctx, c, ns, since)
		if err != nil {
			return err
		}
		for _, w := range want.Want.Status {
			if !strings.Contains(status, w) {
				problems = append(problems, fmt.Sprintf("the status lacks %q", w))
			}
		}
		for _, w := range want.Want.Events {
			if !strings.Contains(events, w) {
				problems = append(problems, fmt.Sprintf("the events lack %q", w))
			}
		}
		if len(problems) > 0 {
			problems = append(problems, "status:\n"+status, "events:\n"+events)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want.Expect)) {
		ref, err := r.resolve(name, aliases, ns)
		if err != nil {
			return err
		}
		u, err := ref.Get(ctx, r.c)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", ref, err))
			continue
		}
		for _, path := range slices.Sorted(maps.Keys(want.Expect[name])) {
			if p := expectValue(u.Object, path, want.Expect[name][path]); p != "" {
				problems = append(problems, fmt.Sprintf("%s %s: %s", ref, path, p))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want.Changes)) {
		ref, err := r.resolve(name, aliases, ns)
		if err != nil {
			return err
		}
		if p := changeProblem(ctx, r.c, ref, want.Changes[name], before[ref.String()]); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// allowed maps the snapshot key of every object the case may change to the differences diff
// may report for it: those its changes declare, and for the objects it creates, being made and
// written by their controller.
func (r *runner) allowed(c *Case, aliases map[string]Ref, ns string) map[string][]string {
	allowed := map[string][]string{}
	for name, how := range c.Changes {
		ref, err := r.resolve(name, aliases, ns)
		if err != nil {
			continue
		}
		switch how {
		case Modified:
			allowed[ref.String()] = []string{"changed"}
		case Recreated:
			allowed[ref.String()] = []string{"recreated"}
		case Deleted:
			allowed[ref.String()] = []string{"deleted"}
		}
	}
	for _, u := range c.created(r.opts.Example, false) {
		r.defaultNamespace(u, ns)
		if key := RefOf(u).String(); allowed[key] == nil {
			allowed[key] = []string{"appeared", "changed"}
		}
	}
	return allowed
}

// Events renders the events of namespace ns about the objects involved accepts, newer than since,
// each "<type> <reason>: <message>", one per line.
func Events(ctx context.Context, c client.Reader, ns string, since time.Time, involved func(corev1.ObjectReference) bool) (string, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return "", err
	}
	var lines []string
	for _, e := range list.Items {
		at := e.LastTimestamp.Time
		if e.Series != nil {
			at = e.Series.LastObservedTime.Time
		} else if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.Before(since.Truncate(time.Second)) || !involved(e.InvolvedObject) {
			continue
		}
		lines = append(lines, e.Type+" "+e.Reason+": "+e.Message)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n"), nil
}

// Conditions renders conditions, each "<type>=<status> <reason>: <message>", one per line.
func Conditions[C any](conds []C, fields func(C) (typ, status, reason, message string)) string {
	var lines []string
	for _, c := range conds {
		typ, status, reason, message := fields(c)
		lines = append(lines, typ+"="+status+" "+reason+": "+message)
	}
	return strings.Join(lines, "\n")
}

// MetaConditions renders metav1 conditions.
func MetaConditions(conds []metav1.Condition) string {
	return Conditions(conds, func(c metav1.Condition) (string, string, string, string) {
		return c.Type, string(c.Status), c.Reason, c.Message
	})
}

// List lists the objects of a kind, in namespace ns when it is not empty.
func List(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, ns string) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	var opts []client.ListOption
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// ReconcilePanics counts the panics controller-runtime's controllers of this process recovered
// from in reconciles.
func ReconcilePanics() (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() == "controller_runtime_reconcile_panics_total" {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total, nil
}
