package exitcode_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/csi-olm/csi-olm/internal/exitcode"
)

func TestOf(t *testing.T) {
	breaking := exitcode.Found(errors.New("2 breaking change(s)"))
	unreadable := errors.New("open catalog: no such file or directory")
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nothing found", nil, exitcode.OK},
		{"findings", breaking, exitcode.Findings},
		{"findings wrapped with context", fmt.Errorf("catalog v4.11: %w", breaking), exitcode.Findings},
		{"a failure", unreadable, exitcode.Failure},
		{"a cancelled run", context.Canceled, exitcode.Failure},
		{"findings in every input", errors.Join(breaking, exitcode.Found(errors.New("invalid"))), exitcode.Findings},
		{"findings in one input, another unreadable", errors.Join(breaking, unreadable), exitcode.Failure},
		{"a failure wrapping findings", fmt.Errorf("%w; and then %w", breaking, unreadable), exitcode.Failure},
		{"no error marked as findings", exitcode.Found(nil), exitcode.OK},
	} {
		if got := exitcode.Of(tc.err); got != tc.want {
			t.Errorf("%s: Of(%v) = %d, want %d", tc.name, tc.err, got, tc.want)
		}
	}
	var f *exitcode.FindingsError
	if !errors.As(fmt.Errorf("x: %w", breaking), &f) || f.Error() != "2 breaking change(s)" {
		t.Errorf("findings do not keep their error: %v", f)
	}
}
