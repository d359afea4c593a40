// Package clustercorpus reads and runs the cluster cases of the bad-input corpus
// (test/badinput/README.md): bad objects and bad edits handed to the API server and to a
// controller running on the test bed. Every case must be refused, by the API server or by the
// controller, with the messages it lists, and must leave the objects around it as they were
// unless it names them in its changes.
package clustercorpus

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// Kind returns the GroupVersionKind of a kind a case may name.
func Kind(kind string) schema.GroupVersionKind { return kinds[kind] }
