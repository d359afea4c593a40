package upgrade_test

import (
	"slices"
	"strings"
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
	tests := []struct {
		name    string
		edges   upgrade.Edges
		from    string
		version *semver.Version
		want    upgrade.Kind
	}{
		{"replaces", edges, "op.v1.1.0", nil, upgrade.Replaces},
		{"skips", edges, "op.v1.0.1", nil, upgrade.Skips},
		{"skipRange", edges, "op.v1.0.5", v("1.0.5"), upgrade.SkipRange},
		{"replaces before skips and skipRange", upgrade.Edges{Replaces: "op.v1.1.0", Skips: []string{"op.v1.1.0"}, SkipRange: ">=1.0.0 <1.2.0"}, "op.v1.1.0", v("1.1.0"), upgrade.Replaces},
		{"skips before skipRange", edges, "op.v1.0.1", v("1.0.1"), upgrade.Skips},
		{"skipRange needs the version", edges, "op.v1.0.5", nil, ""},
		{"the upper bound is outside", edges, "op.v1.2.0", v("1.2.0"), ""},
		{"below the range", edges, "op.v0.9.0", v("0.9.0"), ""},
		{"skipRange goes by version, not name", edges, "other.v1.0.5", v("1.0.5"), upgrade.SkipRange},
		{"no edges", upgrade.Edges{}, "op.v1.0.0", v("1.0.0"), ""},
		{"no skipRange contains nothing", upgrade.Edges{Replaces: "op.v1.1.0"}, "op.v1.0.0", v("1.0.0"), ""},
		{"an unparsable skipRange contains nothing", upgrade.Edges{SkipRange: ">=1.0 <<1.2"}, "op.v1.1.0", v("1.1.0"), ""},
		{"an unparsable skipRange leaves replaces", upgrade.Edges{Replaces: "op.v1.1.0", SkipRange: ">=1.0 <<1.2"}, "op.v1.1.0", v("1.1.0"), upgrade.Replaces},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, _ := tt.edges.Compile()
			kind, ok := rule.From(tt.from, tt.version)
			if kind != tt.want || ok != (tt.want != "") {
				t.Errorf("From(%s, %v) = %q, %v; want %q", tt.from, tt.version, kind, ok, tt.want)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	v := semver.MustParse("1.1.0")
	all, _ := upgrade.Edges{Replaces: "op.v1.1.0", Skips: []string{"op.v1.1.0"}, SkipRange: ">=1.0.0 <1.2.0"}.Compile()
	if got := all.Kinds("op.v1.1.0", &v); !slices.Equal(got, []upgrade.Kind{upgrade.Replaces, upgrade.Skips, upgrade.SkipRange}) {
		t.Errorf("Kinds = %v, want every field, replaces first", got)
	}
	if got := all.Kinds("op.v1.1.0", nil); !slices.Equal(got, []upgrade.Kind{upgrade.Replaces, upgrade.Skips}) {
		t.Errorf("Kinds without a version = %v, want replaces and skips", got)
	}
	if got := all.Kinds("other.v2.0.0", nil); got != nil {
		t.Errorf("Kinds of an unrelated bundle = %v, want none", got)
	}
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name      string
		skipRange string
		wantErr   string
	}{
		{"no skipRange", "", ""},
		{"a range", ">=0.0.6 <4.11.0", ""},
		{"unparsable", ">=1.0 <<1.2", `skipRange ">=1.0 <<1.2" does not parse: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := upgrade.Edges{SkipRange: tt.skipRange}.Compile()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)) {
				t.Errorf("Compile() error = %v, want one starting %q", err, tt.wantErr)
			}
		})
	}
}

func TestInRange(t *testing.T) {
	tests := []struct {
		skipRange, version string
		want               bool
	}{
		{">=0.0.6 <4.11.0", "0.0.6", true},
		{">=0.0.6 <4.11.0", "4.10.0", true},
		{">=0.0.6 <4.11.0", "4.11.0", false},
		{"", "1.0.0", false},
		{">=1.0 <<1.2", "1.1.0", false},
	}
	for _, tt := range tests {
		rule, _ := upgrade.Edges{SkipRange: tt.skipRange}.Compile()
		if got := rule.InRange(semver.MustParse(tt.version)); got != tt.want {
			t.Errorf("skipRange %q contains %s = %v, want %v", tt.skipRange, tt.version, got, tt.want)
		}
	}
}

func TestNamed(t *testing.T) {
	tests := []struct {
		name  string
		edges upgrade.Edges
		want  string
	}{
		{"skips, then replaces", upgrade.Edges{Replaces: "a", Skips: []string{"b", "c"}}, "b c a"},
		{"replaces alone", upgrade.Edges{Replaces: "a"}, "a"},
		{"none", upgrade.Edges{SkipRange: ">=1.0.0"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(tt.edges.Named(), " "); got != tt.want {
				t.Errorf("Named() = %q, want %q", got, tt.want)
			}
		})
	}
}
