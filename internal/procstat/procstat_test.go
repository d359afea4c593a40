package procstat

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Stat
		ok         bool
	}{
		{"plain", "42 (etcd) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 9001 1 2 3",
			Stat{Comm: "etcd", CPU: 3 * time.Second, Start: "9001"}, true},
		{"a name with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 77 1 2 3",
			Stat{Comm: "a (b) c", CPU: 30 * time.Millisecond, Start: "77"}, true},
		{"cut short", "7 (x) R 1 7", Stat{}, false},
		{"no name", "7 x R", Stat{}, false},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 u 2 0 0 20 0 1 0 77 1 2 3", Stat{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse(tc.line)
			if ok != tc.ok || got != tc.want {
				t.Errorf("Parse = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
