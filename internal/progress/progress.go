// Package progress ends a wait when nothing has moved for a while, never at a fixed time.
//
// A machine at half speed takes twice as long over every step of a flow but still takes steps; a
// stuck flow takes none. A deadline tuned on a quick run tells the two apart only on a quick
// machine, while a stall window does on any: each step only has to come within it, however many
// steps a flow has and however slowly they come.
//
// A test makes a context with WithStall and waits on it. Every wait that runs under that context
// reports what it sees change (a new CSV phase, an object's new revision, a new log line, the
// reason a condition is not met yet) with Advance or a Reason, and the context ends only once no
// step has come for the stall window. The test bed's waits and the tests' Eventually report
// their steps this way, so a test's waits need not be written for it one by one.
package progress

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// tracker is the state behind a context made by WithStall.
type tracker struct {
	stall  time.Duration
	cancel context.CancelCauseFunc
	up     context.Context // the context WithStall was given, where outer trackers are found

	mu    sync.Mutex
	timer *time.Timer
	last  string
	at    time.Time
	steps int
}

type trackerKey struct{}

// StallError is the cause of a WithStall context that ended because nothing moved for Stall.
type StallError struct {
	Stall time.Duration
	// Last is the last step reported, Since how long before the stall was declared it came, and
	// Steps how many came in all.
	Last  string
	Since time.Duration
	Steps int
}

func (e *StallError) Error() string {
	return fmt.Sprintf("nothing progressed for %s (after %d steps; the last, %s before, was: %s)",
		e.Stall, e.Steps, e.Since.Round(time.Second), e.Last)
}

// WithStall returns a context that ends when no step has been reported on it (Advance) for
// stall, or when parent ends; Cause then says which. The window starts now, as if a step
// "started" had just come. stop ends the context and releases its timer. A WithStall context
// made under another reports its steps to both.
func WithStall(parent context.Context, stall time.Duration) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	t := &tracker{stall: stall, cancel: cancel, up: parent, last: "started", at: time.Now()}
	t.timer = time.AfterFunc(stall, t.expire)
	return context.WithValue(ctx, trackerKey{}, t), func() {
		t.mu.Lock()
		t.timer.Stop()
		t.mu.Unlock()
		cancel(context.Canceled)
	}
}

// expire ends the context, unless a step came in while the timer fired.
func (t *tracker) expire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if idle := time.Since(t.at); idle < t.stall {
		t.timer.Reset(t.stall - idle)
		return
	}
	t.cancel(&StallError{Stall: t.stall, Last: t.last, Since: time.Since(t.at), Steps: t.steps})
}

// Advance reports a step to every WithStall context ctx is made under: their windows start again
// from now. Under no such context it does nothing, so a wait may always report.
func Advance(ctx context.Context, step string) {
	// Each WithStall context holds its own tracker; an inner one hides the outer from Value, so
	// the outer ones are reached through the parent each tracker's context was made from.
	for ctx != nil {
		t, ok := ctx.Value(trackerKey{}).(*tracker)
		if !ok {
			return
		}
		t.mu.Lock()
		t.last, t.at = step, time.Now()
		t.steps++
		t.mu.Unlock()
		ctx = t.up
	}
}

// Reason reports what a wait sees as a step whenever it changes: a condition that goes from
// "phase Pending" to "phase Installing", or an object at a new revision, is on its way; one that
// says the same thing for a whole stall window is not. The zero value is ready to use.
type Reason struct {
	last string
}

// Note advances ctx's window when state differs from the state noted before.
func (r *Reason) Note(ctx context.Context, what, state string) {
	if state != r.last {
		r.last = state
		Advance(ctx, what+": "+state)
	}
}

// Report notes the reason err gives that a wait is not over, or "done" for a nil err.
func (r *Reason) Report(ctx context.Context, what string, err error) {
	state := "done"
	if err != nil {
		state = err.Error()
	}
	r.Note(ctx, what, state)
}

// Revision notes an object's revision as a wait's state, or the error that kept the object from
// being read: every write to the object is a step.
func (r *Reason) Revision(ctx context.Context, what, resourceVersion string, getErr error) {
	if getErr != nil {
		r.Report(ctx, what, getErr)
		return
	}
	r.Note(ctx, what, "revision "+resourceVersion)
}

// Cause is why ctx ended: its cause when it has one (a *StallError for a stall), else its error.
func Cause(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, ctx.Err()) {
		return cause
	}
	return ctx.Err()
}

// IsStall reports whether err is, or wraps, a stall.
func IsStall(err error) bool {
	var stall *StallError
	return errors.As(err, &stall)
}
