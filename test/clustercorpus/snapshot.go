package clustercorpus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
