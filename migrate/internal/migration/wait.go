package migration

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// checkGrace is how long a check may run past the deadline of the wait.
const checkGrace = 10 * time.Second

// Wait polls check until it reports done, telling out what it waits for whenever the status
// changes and at least every 15 seconds, so that an admin sees a slow step is alive. check
// returns an error only when waiting longer cannot help.
func Wait(ctx context.Context, out io.Writer, what string, timeout time.Duration, check func(context.Context) (done bool, status string, err error)) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Checks run on a context that outlives the deadline by checkGrace: on the deadline's own,
	// a request near it fails at once (client-go's rate limiter refuses a wait that would pass
	// it), and the timeout would report "rate: Wait(n=1) would exceed context deadline" instead
	// of what was seen of the cluster.
	checkCtx, cancelChecks := context.WithTimeout(parent, timeout+checkGrace)
	defer cancelChecks()
	begin := time.Now()
	var last string
	var lastPrinted time.Time
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		done, status, err := check(checkCtx)
		if ctx.Err() != nil && !done {
			// The time is up: the last status seen before it stands.
			return false, nil
		}
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
