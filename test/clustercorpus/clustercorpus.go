// Package clustercorpus reads and runs the cluster cases of the bad-input corpus
// (test/badinput/README.md): bad objects and bad edits handed to the API server and to a
// controller running on the test bed. Every case must be refused, by the API server or by the
// controller, with the messages it lists, and must leave the objects around it as they were
// unless it names them in its changes.
package clustercorpus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"golang.org/x/mod/semver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"
)

// Case is a cluster case's case.yaml. "$NS" anywhere in it stands for the case's own namespace.
type Case struct {
	// About says what is wrong, for the reader of a failure.
	About string `json:"about"`
	// Objects are created first, in order. A Namespace named $NS replaces the one the runner
	// would create; namespaced objects without a namespace go to $NS.
	Objects []map[string]any `json:"objects,omitempty"`
	// Create is the object the case is about: the bad object, or the one its steps act on.
	Create *Object `json:"create,omitempty"`
	// Ready waits, before the steps, for the created object to be ready (what that means is the
	// surface's: a SharedVolume Ready, a ClusterCSIDriver's driver deployed and available).
	Ready bool `json:"ready,omitempty"`
	// Steps are done in order after the create.
	Steps []Step `json:"steps,omitempty"`
	// Want says where each line must appear.
	Want Want `json:"want,omitempty"`
	// Changes names the objects the case may change, each with how: modified (written in place,
	// the same UID), recreated (deleted and made again, a new UID) or deleted (gone at the end).
	// Every other object of the case's scope must end as it was before the case's first bad
	// action, and no other object may appear.
	Changes map[string]string `json:"changes,omitempty"`
	// Expect maps an object to JSON pointers (RFC 6901) and the values they must end with;
	// "<set>" is any value, "<absent>" none.
	Expect map[string]map[string]any `json:"expect,omitempty"`
}

// Object is an object to create: a full object, or a shipped example changed by a patch.
type Object struct {
	// Base "example" is the surface's shipped example, in the case's namespace: the newest
	// bundle's alm-examples SharedVolume, or its initialization-resource ClusterCSIDriver.
	Base string `json:"base,omitempty"`
	// Patch holds RFC 6902 operations applied to the base.
	Patch []map[string]any `json:"patch,omitempty"`
	// Object is the full object, when there is no base.
	Object map[string]any `json:"object,omitempty"`
}

// Step is one action on the cluster: a create, a patch or a delete.
type Step struct {
	Create *Object `json:"create,omitempty"`
	// Patch names the object to patch, with Merge (a JSON merge patch, RFC 7386) or JSON
	// (RFC 6902 operations).
	Patch string           `json:"patch,omitempty"`
	Merge map[string]any   `json:"merge,omitempty"`
	JSON  []map[string]any `json:"json,omitempty"`
	// Status patches the status subresource.
	Status bool `json:"status,omitempty"`
	// Delete names the object to delete.
	Delete string `json:"delete,omitempty"`
	// Refused says the API server must refuse the step: want.error holds what it must say, and
	// the object must be left as it was.
	Refused bool `json:"refused,omitempty"`
	// Await waits, after the step, for these lines and values before the next step.
	Await *Await `json:"await,omitempty"`
}

// Await is what a step waits for.
type Await struct {
	Status []string                  `json:"status,omitempty"`
	Events []string                  `json:"events,omitempty"`
	Expect map[string]map[string]any `json:"expect,omitempty"`
}

// Want lists what must be said, by where it must appear.
type Want struct {
	// Error is the API server's refusal of the create, or of the step marked refused.
	Error []string `json:"error,omitempty"`
	// Status is the surface's status rendering: a SharedVolume's "phase <phase>: <message>" and
	// its conditions, a ClusterCSIDriver's conditions, each "<type>=<status> <reason>: <message>".
	Status []string `json:"status,omitempty"`
	// Events are the events about the object, each "<type> <reason>: <message>".
	Events []string `json:"events,omitempty"`
}

// Change kinds.
const (
	Modified  = "modified"
	Recreated = "recreated"
	Deleted   = "deleted"
)

// Ref names an object on the cluster.
type Ref struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.GVK.Kind + " " + r.Name
	}
	return r.GVK.Kind + " " + r.Namespace + "/" + r.Name
}

// Get reads the object.
func (r Ref) Get(ctx context.Context, c client.Reader) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(r.GVK)
	err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, u)
	return u, err
}

// RefOf names an object read from the cluster.
func RefOf(u *unstructured.Unstructured) Ref {
	return Ref{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// kinds are the kinds a step or a change may name as "<Kind>/<name>".
var kinds = map[string]schema.GroupVersionKind{
	"Namespace":             corev1.SchemeGroupVersion.WithKind("Namespace"),
	"ConfigMap":             corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	"PersistentVolume":      corev1.SchemeGroupVersion.WithKind("PersistentVolume"),
	"PersistentVolumeClaim": corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
	"Pod":                   corev1.SchemeGroupVersion.WithKind("Pod"),
	"SharedVolume":          {Group: "aws-efs.managed.openshift.io", Version: "v1alpha1", Kind: "SharedVolume"},
	"ClusterCSIDriver":      {Group: "operator.openshift.io", Version: "v1", Kind: "ClusterCSIDriver"},
	"Deployment":            {Group: "apps", Version: "v1", Kind: "Deployment"},
	"DaemonSet":             {Group: "apps", Version: "v1", Kind: "DaemonSet"},
	"CSIDriver":             {Group: "storage.k8s.io", Version: "v1", Kind: "CSIDriver"},
}

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

// Load reads every case below dir, by name, with $NS standing for the namespace ns(name) gives.
func Load(dir string, ns func(name string) string) (map[string]*Case, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	cases := map[string]*Case{}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := LoadCase(filepath.Join(dir, e.Name(), "case.yaml"), ns(e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cases[e.Name()] = c
	}
	return cases, errors.Join(errs...)
}

// LoadCase reads one case.yaml strictly and checks that it says what is wrong and what must be
// said.
func LoadCase(file, ns string) (*Case, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	raw = bytes.ReplaceAll(raw, []byte("$NS"), []byte(ns))
	var c Case
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if problems := c.problems(); len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", file, strings.Join(problems, "; "))
	}
	return &c, nil
}

func (c *Case) problems() []string {
	var problems []string
	if c.About == "" {
		problems = append(problems, "about is empty: say what is wrong")
	}
	refused := 0
	for i, s := range c.Steps {
		actions := 0
		for _, set := range []bool{s.Create != nil, s.Patch != "", s.Delete != ""} {
			if set {
				actions++
			}
		}
		if actions != 1 {
			problems = append(problems, fmt.Sprintf("step %d does %d things: give it one of create, patch, delete", i+1, actions))
		}
		if s.Patch != "" && (s.Merge == nil) == (s.JSON == nil) {
			problems = append(problems, fmt.Sprintf("step %d patches %s with neither or both of merge and json", i+1, s.Patch))
		}
		if s.Refused {
			refused++
		}
	}
	if c.Create == nil && len(c.Steps) == 0 {
		problems = append(problems, "nothing to do: give it a create or steps")
	}
	for _, s := range append([]Step{{Create: c.Create}}, c.Steps...) {
		if o := s.Create; o != nil && (o.Base != "" && o.Base != "example" || (o.Base == "") == (o.Object == nil) || o.Patch != nil && o.Base == "") {
			problems = append(problems, "an object to create is base: example (with an optional patch) or a whole object")
		}
	}
	if len(c.Want.Error) > 0 && refused == 0 && c.Create == nil {
		problems = append(problems, "want.error without a create or a refused step")
	}
	if refused > 1 || (refused == 1 && len(c.Want.Error) == 0) {
		problems = append(problems, "one refused step, with want.error saying what the API server says")
	}
	if len(c.Want.Error)+len(c.Want.Status)+len(c.Want.Events)+len(c.Expect) == 0 && !slices.Contains(slices.Collect(maps.Values(c.Changes)), Deleted) {
		problems = append(problems, "want is empty: say what must be said, or expect an end state")
	}
	for name, how := range c.Changes {
		if !slices.Contains([]string{Modified, Recreated, Deleted}, how) {
			problems = append(problems, fmt.Sprintf("changes.%s is %q: modified, recreated or deleted", name, how))
		}
	}
	return problems
}

// createRefused says the API server must refuse the case's create.
func (c *Case) createRefused() bool {
	if len(c.Want.Error) == 0 {
		return false
	}
	for _, s := range c.Steps {
		if s.Refused {
			return false
		}
	}
	return true
}

// Subject is the object of the case's create, or of its first step that creates one; nil when
// neither can be built.
func (c *Case) Subject(example map[string]any) map[string]any {
	if created := c.created(example, true); len(created) > 0 {
		return created[0].Object
	}
	return nil
}

// created are the objects the case's create and create steps make, in order; with refused,
// also those the API server must refuse.
func (c *Case) created(example map[string]any, refused bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	steps := append([]Step{{Create: c.Create, Refused: c.createRefused()}}, c.Steps...)
	for _, s := range steps {
		if s.Create == nil || s.Refused && !refused {
			continue
		}
		if u, err := s.Create.Build(example); err == nil {
			out = append(out, u)
		}
	}
	return out
}

// Build makes the object: the base (a deep copy of example) with the patch applied, or the full
// object.
func (o *Object) Build(example map[string]any) (*unstructured.Unstructured, error) {
	switch {
	case o.Base == "" && o.Object != nil:
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		return u, u.UnmarshalJSON(raw)
	case o.Base == "example" && o.Object == nil:
		doc, err := json.Marshal(example)
		if err != nil {
			return nil, err
		}
		if len(o.Patch) > 0 {
			ops, err := json.Marshal(o.Patch)
			if err != nil {
				return nil, err
			}
			patch, err := jsonpatch.DecodePatch(ops)
			if err != nil {
				return nil, fmt.Errorf("patch: %w", err)
			}
			if doc, err = patch.Apply(doc); err != nil {
				return nil, fmt.Errorf("patch: %w", err)
			}
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(doc); err != nil {
			return nil, err
		}
		// The example's namespace is illustrative: the object goes to the case's.
		u.SetNamespace("")
		return u, nil
	}
	return nil, fmt.Errorf("an object is base: example (with an optional patch) or a full object, not base %q with object %v", o.Base, o.Object != nil)
}

// ShippedExample reads, from the newest bundle of package pkg below repoRoot/bundle, the example
// of kind the CSV ships: in its alm-examples or as its initialization-resource.
func ShippedExample(repoRoot, pkg, kind string) (map[string]any, error) {
	dir := filepath.Join(repoRoot, "bundle", pkg)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	newest := ""
	for _, e := range entries {
		if e.IsDir() && semver.IsValid("v"+e.Name()) && (newest == "" || semver.Compare("v"+e.Name(), "v"+newest) > 0) {
			newest = e.Name()
		}
	}
	csvs, err := filepath.Glob(filepath.Join(dir, newest, "manifests", "*.clusterserviceversion.yaml"))
	if err != nil || len(csvs) != 1 {
		return nil, fmt.Errorf("finding the CSV of %s %s: %d found (%v)", pkg, newest, len(csvs), err)
	}
	raw, err := os.ReadFile(csvs[0])
	if err != nil {
		return nil, err
	}
	var csv struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return nil, fmt.Errorf("%s: %w", csvs[0], err)
	}
	var examples []map[string]any
	if s := csv.Metadata.Annotations["alm-examples"]; s != "" {
		if err := json.Unmarshal([]byte(s), &examples); err != nil {
			return nil, fmt.Errorf("%s: alm-examples: %w", csvs[0], err)
		}
	}
	if s := csv.Metadata.Annotations["operatorframework.io/initialization-resource"]; s != "" {
		var init map[string]any
		if err := json.Unmarshal([]byte(s), &init); err != nil {
			return nil, fmt.Errorf("%s: initialization-resource: %w", csvs[0], err)
		}
		examples = append(examples, init)
	}
	for _, e := range examples {
		if e["kind"] == kind {
			return e, nil
		}
	}
	return nil, fmt.Errorf("%s ships no example of %s", csvs[0], kind)
}

// Namespace is the namespace of case name: a DNS label, unique per case.
func Namespace(prefix, name string) string {
	ns := prefix + name
	if len(ns) > 63 {
		sum := sha256.Sum256([]byte(name))
		ns = ns[:63-9] + "-" + hex.EncodeToString(sum[:4])
	}
	return strings.TrimRight(ns, "-")
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

// stampOf is an object's stamp, as snapshot records it; "" when the object does not exist.
func stampOf(ctx context.Context, c client.Reader, ref Ref) (string, error) {
	u, err := ref.Get(ctx, c)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return stamp(u), nil
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

// changeProblem says how an object has not (yet) changed as declared, or "".
func changeProblem(ctx context.Context, c client.Reader, ref Ref, how, before string) string {
	u, err := ref.Get(ctx, c)
	if apierrors.IsNotFound(err) {
		if how == Deleted {
			return ""
		}
		return fmt.Sprintf("%s does not exist, want it %s", ref, how)
	}
	if err != nil {
		return fmt.Sprintf("%s: %v", ref, err)
	}
	uidBefore, _, _ := strings.Cut(before, " ")
	switch {
	case how == Deleted:
		return fmt.Sprintf("%s is not deleted (deletionTimestamp %v, finalizers %v)", ref, u.GetDeletionTimestamp(), u.GetFinalizers())
	case how == Recreated && string(u.GetUID()) == uidBefore:
		return fmt.Sprintf("%s is not recreated: it is the same object", ref)
	case how == Modified && before == "":
		return fmt.Sprintf("%s was not there before the case, so it cannot be modified", ref)
	case how == Modified && string(u.GetUID()) != uidBefore:
		return fmt.Sprintf("%s was replaced by a new object, want it modified in place", ref)
	}
	return ""
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

// snapshot maps every object of the case's scope, and the case's own objects, to its stamp.
func (r *runner) snapshot(ctx context.Context, c *Case, ns string) (map[string]string, error) {
	objs, err := r.s.Scope(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("listing the case's scope: %w", err)
	}
	for _, o := range c.Objects {
		u := (&unstructured.Unstructured{Object: o}).DeepCopy()
		r.defaultNamespace(u, ns)
		got, err := RefOf(u).Get(ctx, r.c)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, got)
	}
	snap := map[string]string{}
	for _, u := range objs {
		snap[RefOf(u).String()] = stamp(u)
	}
	return snap, nil
}

// stamp is an object's UID and a hash of what a write to it changes, leaving out its status
// and the bookkeeping the API server updates with it.
func stamp(u *unstructured.Unstructured) string {
	obj := u.DeepCopy().Object
	delete(obj, "status")
	if m, ok := obj["metadata"].(map[string]any); ok {
		for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
			delete(m, f)
		}
	}
	raw, _ := json.Marshal(obj)
	sum := sha256.Sum256(raw)
	return string(u.GetUID()) + " " + hex.EncodeToString(sum[:8])
}

// diff describes how two snapshots differ, each line starting with the object's key and ": ".
func diff(before, after map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		a, ok := after[k]
		uidBefore, _, _ := strings.Cut(before[k], " ")
		uidAfter, _, _ := strings.Cut(a, " ")
		switch {
		case !ok:
			out = append(out, k+": deleted")
		case uidBefore != uidAfter:
			out = append(out, k+": recreated")
		case a != before[k]:
			out = append(out, k+": changed")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			out = append(out, k+": appeared")
		}
	}
	return out
}

// expectValue says how the value at a JSON pointer differs from the one expected, or "".
func expectValue(obj map[string]any, pointer string, want any) string {
	got, ok := lookup(obj, pointer)
	switch want {
	case "<absent>":
		if ok {
			return fmt.Sprintf("is %v, want it absent", got)
		}
		return ""
	case "<set>":
		if !ok || got == nil || got == "" {
			return "is absent, want a value"
		}
		return ""
	}
	if !ok {
		return fmt.Sprintf("is absent, want %v", want)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		return fmt.Sprintf("is %s, want %s", g, w)
	}
	return ""
}

// lookup follows an RFC 6901 JSON pointer.
func lookup(v any, pointer string) (any, bool) {
	if pointer == "" {
		return v, true
	}
	if !strings.HasPrefix(pointer, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
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

// Kind returns the GroupVersionKind of a kind a case may name.
func Kind(kind string) schema.GroupVersionKind { return kinds[kind] }

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
