package migration

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Wait polls check until it reports done, telling out what it waits for whenever the status
// changes and at least every 15 seconds, so that an admin sees a slow step is alive. check
// returns an error only when waiting longer cannot help.
func Wait(ctx context.Context, out io.Writer, what string, timeout time.Duration, check func(context.Context) (done bool, status string, err error)) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	begin := time.Now()
	var last string
	var lastPrinted time.Time
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		done, status, err := check(ctx)
		if err != nil || done {
			return done, err
		}
		if status != last || time.Since(lastPrinted) >= 15*time.Second {
			fmt.Fprintf(out, "      waiting %s for %s: %s\n", time.Since(begin).Round(time.Second), what, status)
			last, lastPrinted = status, time.Now()
		}
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case parent.Err() != nil:
		return fmt.Errorf("stopped waiting for %s: %w (last: %s)", what, parent.Err(), last)
	case ctx.Err() != nil:
		return fmt.Errorf("gave up waiting for %s after %s: %s", what, timeout, last)
	default:
		return err
	}
}
