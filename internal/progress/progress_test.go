package progress

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStallEndsOnlyWithoutSteps(t *testing.T) {
	// Steps every 10 ms for half a second outlive a window of a fifth of a second many times
	// over: only a scheduler that left this goroutine idle for a whole window could end it, and
	// the context would then say so.
	ctx, stop := WithStall(context.Background(), 200*time.Millisecond)
	defer stop()
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		Advance(ctx, "a step")
		if ctx.Err() != nil {
			t.Fatalf("the context ended while steps came every 10 ms: %v", Cause(ctx))
		}
	}
	Advance(ctx, "the last step")
	<-ctx.Done()
	var stall *StallError
	if !errors.As(context.Cause(ctx), &stall) || !IsStall(Cause(ctx)) {
		t.Fatalf("cause = %v, want a *StallError", context.Cause(ctx))
	}
	if stall.Last != "the last step" || stall.Since < 200*time.Millisecond {
		t.Errorf("stall = %+v, want the last step named and at least the window since it", stall)
	}
	if !strings.Contains(Cause(ctx).Error(), "nothing progressed for 200ms") {
		t.Errorf("Cause = %q, want it to say how long nothing progressed", Cause(ctx))
	}
}

func TestAdvanceReachesEveryWindow(t *testing.T) {
	outer, stopOuter := WithStall(context.Background(), time.Hour)
	defer stopOuter()
	inner, stopInner := WithStall(outer, time.Hour)
	defer stopInner()
	Advance(inner, "a step")
	for name, ctx := range map[string]context.Context{"inner": inner, "outer": outer} {
		if got := ctx.Value(trackerKey{}).(*tracker); got.steps != 1 || got.last != "a step" {
			t.Errorf("%s window: %d steps, last %q; want the inner wait's step", name, got.steps, got.last)
		}
	}
	// No window: nothing to report to, and no panic.
	Advance(context.Background(), "a step")
}

func TestReasonCountsChangesOnly(t *testing.T) {
	ctx, stop := WithStall(context.Background(), time.Hour)
	defer stop()
	var r Reason
	for _, phase := range []string{"Pending", "Pending", "Installing", "Installing", ""} {
		var err error
		if phase != "" {
			err = errors.New("phase " + phase)
		}
		r.Report(ctx, "the CSV", err)
	}
	// "phase Pending", "phase Installing" and the end: a repeated reason is no step.
	if got := ctx.Value(trackerKey{}).(*tracker); got.steps != 3 || got.last != "the CSV: done" {
		t.Errorf("%d steps, last %q; want 3, the last the wait's end", got.steps, got.last)
	}
}

func TestCauseOfAPlainCancel(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, stop := WithStall(parent, time.Hour)
	defer stop()
	cancel()
	<-ctx.Done()
	if err := Cause(ctx); !errors.Is(err, context.Canceled) || IsStall(err) {
		t.Errorf("Cause = %v, want context.Canceled", err)
	}
}

func TestRevisionIsAStepPerWrite(t *testing.T) {
	ctx, stop := WithStall(context.Background(), time.Hour)
	defer stop()
	var r Reason
	notFound := errors.New("not found")
	for _, read := range []struct {
		rv  string
		err error
	}{{"", notFound}, {"", notFound}, {"7", nil}, {"7", nil}, {"9", nil}} {
		r.Revision(ctx, "CSV a", read.rv, read.err)
	}
	// The error, revision 7 and revision 9: a re-read of the same revision is no step.
	if got := ctx.Value(trackerKey{}).(*tracker); got.steps != 3 || got.last != "CSV a: revision 9" {
		t.Errorf("%d steps, last %q; want 3, the last revision 9", got.steps, got.last)
	}
}
