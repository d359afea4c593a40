package migration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Facts are what a verb records in its journal. Problems names what makes facts decoded from a
// journal in namespace, for target, unfit to act on.
type Facts interface {
	Problems(namespace, target string) []string
}

// trust decodes the journal's facts into recorded and checks that the journal is one csi-olm
// wrote, as it wrote it: a run acts on what the journal says is done and on the facts it keeps
// (the original Subscription to restore, the objects to delete), so a journal edited by hand,
// cut short, or of another verb would make it skip a step that never ran or act on the wrong
// objects. Every problem is reported; the error says how to recover.
func (j *Journal) trust(verb, target string, steps []string, recorded Facts) error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	data := j.cm.Data
	if want := Name(verb, target); j.cm.Name != want {
		add("it carries the labels of the journal of migration %s %s, but that journal is named %s", verb, target, want)
	}

	if raw, ok := data[factsKey]; !ok {
		add("it has no key %s", factsKey)
	} else {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		switch err := dec.Decode(recorded); {
		case err != nil:
			add("key %s is not a record of migration %s %s: %v", factsKey, verb, target, err)
		case dec.More():
			add("key %s holds more than one JSON document", factsKey)
		default:
			for _, p := range recorded.Problems(j.cm.Namespace, target) {
				add("key %s: %s", factsKey, p)
			}
		}
	}

	switch phase, ok := data[phaseKey]; {
	case !ok:
		add("it has no key %s", phaseKey)
	case phase != InProgress && phase != Completed:
		add("key %s is %q, which is neither %s nor %s", phaseKey, phase, InProgress, Completed)
	}

	done := strings.Fields(data[completedKey])
	for i, name := range done {
		switch {
		case !slices.Contains(steps, name):
			add("key %s names step %q, which migration %s does not have (its steps: %s)", completedKey, name, verb, strings.Join(steps, ", "))
		case slices.Contains(done[:i], name):
			add("key %s names step %q twice", completedKey, name)
		}
	}
	// Steps run in order, so the steps done are the first ones.
	var missing []string
	for _, name := range steps {
		if !slices.Contains(done, name) {
			missing = append(missing, name)
			continue
		}
		if len(missing) > 0 {
			add("key %s records step %s as done, but not step %s, which runs before it", completedKey, name, missing[0])
		}
	}
	if data[phaseKey] == Completed && len(missing) > 0 {
		add("key %s is %s, but key %s lacks step %s", phaseKey, Completed, completedKey, strings.Join(missing, ", "))
	}

	switch sum, ok := data[checksumKey]; {
	case !ok:
		add("it has no key %s, so whether it was edited cannot be told (an older csi-olm, or a hand, wrote it)", checksumKey)
	case sum != checksum(data):
		add("key %s does not match keys %s, %s and %s: they were changed after csi-olm wrote them", checksumKey, factsKey, completedKey, phaseKey)
	}

	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf(`cannot trust ConfigMap %s, the journal of an earlier run of migrate %s:
  - %s
csi-olm acts on no journal it cannot trust, and changed nothing. Read what it records
(kubectl get configmap -n %s %s -o yaml), check the cluster against it, then delete it
(%s) and run again to plan the migration anew`,
		j.Ref(), verb, strings.Join(problems, "\n  - "), j.cm.Namespace, j.cm.Name, j.DeleteCommand())
}
