// Package migration holds what the migrate verbs share. Chiefly the journal: a migration is
// recorded on the cluster it changes, in a ConfigMap holding the facts it cannot find again once
// it has deleted or changed them, what it is about to do, and which steps are done, so that a
// migration killed at any point resumes from its journal.
package migration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels find a journal in any namespace.
const (
	VerbLabel   = "migrate.csi-olm.io/verb"
	TargetLabel = "migrate.csi-olm.io/target"
)

// Keys of the journal's data. The checksum covers the facts, the steps done and the phase, the
// keys a run acts on, so that a journal edited by hand is refused rather than trusted; the log
// and the failure are for people and are not covered.
const (
	factsKey     = "facts.json"
	completedKey = "completed"
	logKey       = "log"
	phaseKey     = "phase"
	checksumKey  = "checksum"
	failedKey    = "failed"
)

// Phases of a migration.
const (
	InProgress = "InProgress"
	Completed  = "Completed"
)

const fieldManager = "csi-olm-migrate"

// Journal is the record of one migration.
type Journal struct {
	c  client.Client
	cm *corev1.ConfigMap
}

// Name is the ConfigMap name of the journal of a verb and target.
func Name(verb, target string) string { return "csi-olm-migrate-" + verb + "-" + target }

// Find returns the journal of a verb and target in any namespace, or nil.
func Find(ctx context.Context, c client.Client, verb, target string) (*Journal, error) {
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list, client.MatchingLabels{VerbLabel: verb, TargetLabel: target}); err != nil {
		return nil, fmt.Errorf("looking for the journal of an earlier migration: %w", err)
	}
	switch len(list.Items) {
	case 0:
		return nil, nil
	case 1:
		return &Journal{c: c, cm: &list.Items[0]}, nil
	}
	var where []string
	for _, cm := range list.Items {
		where = append(where, cm.Namespace+"/"+cm.Name)
	}
	return nil, fmt.Errorf("found %d journals of migration %s %s (%s): keep the one of the migration you ran and delete the others",
		len(list.Items), verb, target, strings.Join(where, ", "))
}

// Create records a new migration with its facts, before any of its steps runs.
func Create(ctx context.Context, c client.Client, namespace, verb, target string, facts any) (*Journal, error) {
	raw, err := json.MarshalIndent(facts, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the migration's facts: %w", err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: Name(verb, target),
			Labels: map[string]string{VerbLabel: verb, TargetLabel: target},
		},
		Data: map[string]string{factsKey: string(raw), phaseKey: InProgress, logKey: line("recorded the facts")},
	}
	cm.Data[checksumKey] = checksum(cm.Data)
	if err := c.Create(ctx, cm, client.FieldOwner(fieldManager)); err != nil {
		return nil, fmt.Errorf("recording the migration in ConfigMap %s/%s: %w", namespace, cm.Name, err)
	}
	j := &Journal{c: c, cm: cm}
	killIfAsked("record")
	return j, nil
}

// Ref names the journal's ConfigMap.
func (j *Journal) Ref() string { return j.cm.Namespace + "/" + j.cm.Name }

// DeleteCommand is the command that deletes the journal, for an admin who decided to.
func (j *Journal) DeleteCommand() string {
	return "kubectl delete configmap -n " + j.cm.Namespace + " " + j.cm.Name
}

// checksum is what a journal's checksum key holds for its data: the SHA-256, in hex, of the
// facts, the steps done and the phase, each followed by a NUL byte.
func checksum(data map[string]string) string {
	h := sha256.New()
	for _, key := range []string{factsKey, completedKey, phaseKey} {
		h.Write([]byte(data[key]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Completed is true once every step of the migration is done.
func (j *Journal) Completed() bool { return j.cm.Data[phaseKey] == Completed }

// Done reports whether the journal records a step as done.
func (j *Journal) Done(step string) bool {
	return slices.Contains(strings.Fields(j.cm.Data[completedKey]), step)
}

// Step is one idempotent action of a migration: running it again after it took effect, or
// after it was interrupted, must be harmless.
type Step struct {
	Name        string
	Description string
	Do          func(ctx context.Context) error
}

// Run runs the steps not yet recorded as done, recording each before it starts and after it
// took effect, and reports them on out.
func (j *Journal) Run(ctx context.Context, out io.Writer, steps []Step) error {
	for i, s := range steps {
		prefix := fmt.Sprintf("[%d/%d] %s", i+1, len(steps), s.Description)
		if j.Done(s.Name) {
			fmt.Fprintf(out, "%s: done before\n", prefix)
			continue
		}
		if err := j.update(ctx, func(data map[string]string) { data[logKey] += line("about to: " + s.Description) }); err != nil {
			return err
		}
		fmt.Fprintln(out, prefix)
		if err := s.Do(ctx); err != nil {
			return j.failed(ctx, s.Name, err)
		}
		killIfAsked(s.Name)
		if err := j.update(ctx, func(data map[string]string) {
			data[completedKey] = strings.TrimSpace(data[completedKey] + " " + s.Name)
			data[logKey] += line("done: " + s.Name)
			delete(data, failedKey)
		}); err != nil {
			return err
		}
	}
	return j.update(ctx, func(data map[string]string) {
		data[phaseKey] = Completed
		data[logKey] += line("completed")
	})
}

// ErrNothingChanged marks the error of a step that refused before changing anything.
var ErrNothingChanged = errors.New("nothing was changed")

// failed records a step's failure in the journal. A step that refused before any step took
// effect leaves nothing to resume or restore, so its journal is deleted instead: the cluster is
// as it was before the run.
func (j *Journal) failed(ctx context.Context, step string, err error) error {
	// A run stopped by its caller (an interrupt) records why as well.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	stepErr := &StepError{Step: step, Err: err}
	if errors.Is(err, ErrNothingChanged) && strings.TrimSpace(j.cm.Data[completedKey]) == "" {
		uid, version := j.cm.UID, j.cm.ResourceVersion
		delErr := j.c.Delete(ctx, j.cm, client.Preconditions{UID: &uid, ResourceVersion: &version})
		if delErr == nil || apierrors.IsNotFound(delErr) {
			stepErr.Discarded = true
			return stepErr
		}
		err = fmt.Errorf("%w (and removing the journal %s failed: %v)", err, j.Ref(), delErr)
		stepErr.Err = err
	}
	if recErr := j.update(ctx, func(data map[string]string) {
		data[failedKey] = step + ": " + err.Error()
		data[logKey] += line("failed: " + step + ": " + err.Error())
	}); recErr != nil {
		stepErr.Err = fmt.Errorf("%w (and recording the failure failed: %v)", err, recErr)
	}
	return stepErr
}

// StepError is a step that failed; the journal says which steps are done.
type StepError struct {
	Step string
	Err  error
	// Discarded is true when the journal was deleted because nothing had changed.
	Discarded bool
}

func (e *StepError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

func (j *Journal) update(ctx context.Context, change func(map[string]string)) error {
	updated := j.cm.DeepCopy()
	change(updated.Data)
	updated.Data[checksumKey] = checksum(updated.Data)
	if err := j.c.Update(ctx, updated, client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("updating the migration's journal %s: %w", j.Ref(), err)
	}
	j.cm = updated
	return nil
}

func line(s string) string { return time.Now().UTC().Format(time.RFC3339) + " " + s + "\n" }

// Forget deletes the completed journal of verb and target, if there is one: a new run in the
// other direction starts a record of its own. An unfinished one is refused: it says what an
// interrupted run left to do.
func Forget(ctx context.Context, c client.Client, verb, target string) error {
	j, err := Find(ctx, c, verb, target)
	if err != nil || j == nil {
		return err
	}
	if !j.Completed() {
		return fmt.Errorf("ConfigMap %s records an unfinished run of migrate %s: finish it first (run it again), or delete it (%s)", j.Ref(), verb, j.DeleteCommand())
	}
	return j.Delete(ctx)
}

// Delete deletes the journal, once the run it records no longer matters: undone by the way back.
func (j *Journal) Delete(ctx context.Context) error {
	uid := j.cm.UID
	if err := j.c.Delete(ctx, j.cm, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the journal %s: %w", j.Ref(), err)
	}
	return nil
}
