package upgrade_test

import (
	"testing"

	"github.com/blang/semver/v4"

	"github.com/csi-olm/csi-olm/internal/upgrade"
)

func TestFrom(t *testing.T) {
	v := func(s string) *semver.Version {
		parsed := semver.MustParse(s)
		return &parsed
	}
	edges := upgrade.Edges{Replaces: "op.v1.1.0", Skips: []string{"op.v1.0.1"}, SkipRange: ">=1.0.0 <1.2.0"}
	for _, tt := range []struct {
		name    string
		edges   upgrade.Edges
		from    string
		version *semver.Version
		want    upgrade.Kind
	}{
		{"replaces", edges, "op.v1.1.0", v("1.1.0"), upgrade.Replaces},
		{"replaces wins over the range", edges, "op.v1.1.0", nil, upgrade.Replaces},
		{"skips", edges, "op.v1.0.1", v("1.0.1"), upgrade.Skips},
		{"skipRange", edges, "op.v1.0.5", v("1.0.5"), upgrade.SkipRange},
		{"skipRange needs a version", edges, "op.v1.0.5", nil, ""},
		{"outside the range", edges, "op.v1.2.0", v("1.2.0"), ""},
		{"below the range", edges, "op.v0.9.0", v("0.9.0"), ""},
		{"another package's name, same version", edges, "other.v1.0.5", v("1.0.5"), upgrade.SkipRange},
		{"no edges", upgrade.Edges{}, "op.v1.0.0", v("1.0.0"), ""},
		{"an unparsable range contains nothing", upgrade.Edges{SkipRange: ">=1.0 <<1.2"}, "op.v1.1.0", v("1.1.0"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rule, _ := tt.edges.Compile()
			kind, ok := rule.From(tt.from, tt.version)
			if kind != tt.want || ok != (tt.want != "") {
				t.Errorf("From(%s, %v) = %q, %v; want %q", tt.from, tt.version, kind, ok, tt.want)
			}
		})
	}
}

func TestCompile(t *testing.T) {
	if _, err := (upgrade.Edges{SkipRange: ">=1.0 <<1.2"}).Compile(); err == nil || err.Error()[:32] != `skipRange ">=1.0 <<1.2" does not` {
		t.Errorf("err = %v, want one naming the skipRange", err)
	}
	for _, e := range []upgrade.Edges{{}, {SkipRange: ">=0.0.6 <4.11.0"}} {
		if _, err := e.Compile(); err != nil {
			t.Errorf("%+v: %v", e, err)
		}
	}
}

func TestNamed(t *testing.T) {
	got := upgrade.Edges{Replaces: "a", Skips: []string{"b", "c"}}.Named()
	if len(got) != 3 || got[0] != "b" || got[1] != "c" || got[2] != "a" {
		t.Errorf("Named() = %v, want [b c a]", got)
	}
	if got := (upgrade.Edges{}).Named(); len(got) != 0 {
		t.Errorf("Named() of no edges = %v", got)
	}
}
