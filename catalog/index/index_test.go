package index_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

func e(name, replaces string, skips ...string) declcfg.ChannelEntry {
	return declcfg.ChannelEntry{Name: name, Replaces: replaces, Skips: skips}
}

// channel indexes one channel of package demo whose bundles a, b, c... have versions 1.0.0,
// 1.1.0, 1.2.0... in the order of the letters.
func channel(entries ...declcfg.ChannelEntry) *index.Channel {
	cfg := &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "demo", DefaultChannel: "stable"}},
		Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: "demo", Name: "stable", Entries: entries}},
	}
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		cfg.Bundles = append(cfg.Bundles, declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: "demo", Name: name,
			Properties: []property.Property{property.MustBuildPackage("demo", fmt.Sprintf("1.%d.0", i))}})
	}
	return index.New(cfg).Channel("demo", "stable")
}

func TestHead(t *testing.T) {
	tests := []struct {
		name    string
		entries []declcfg.ChannelEntry
		want    string
	}{
		{"replaces chain", []declcfg.ChannelEntry{e("a", ""), e("b", "a"), e("c", "b")}, "c"},
		{"skips", []declcfg.ChannelEntry{e("a", ""), e("b", "", "a")}, "b"},
		{"a skipRange makes no head", []declcfg.ChannelEntry{e("a", ""), {Name: "b", SkipRange: ">=0.0.0"}}, ""},
		{"two heads", []declcfg.ChannelEntry{e("a", ""), e("b", "")}, ""},
		{"cycle", []declcfg.ChannelEntry{e("a", "b"), e("b", "a")}, ""},
		{"empty channel", nil, ""},
		// opm rejects a channel that lists an entry twice; the head is still read from every entry.
		{"head listed twice", []declcfg.ChannelEntry{e("a", ""), e("b", "a"), e("b", "a")}, ""},
		{"replaced entry listed twice, once without edges", []declcfg.ChannelEntry{e("a", ""), e("b", "a"), e("b", ""), e("c", "b")}, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := channel(tt.entries...).Head(); got != tt.want {
				t.Errorf("Head = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestChannelGraph(t *testing.T) {
	tests := []struct {
		name    string
		entries []declcfg.ChannelEntry
		order   []string
		loops   [][]string
		reaches []string
	}{
		{name: "replaces chain", entries: []declcfg.ChannelEntry{e("a", ""), e("b", "a"), e("c", "b")},
			order: []string{"c", "b", "a"}, reaches: []string{"a", "b", "c"}},
		// b was pulled: c skips it and replaces a. OLM's order leaves b out, and b still reaches
		// the head only because it is in no loop: nothing upgrades from it.
		{name: "skipped middle", entries: []declcfg.ChannelEntry{e("a", ""), e("b", "a"), e("c", "a", "b"), e("d", "c")},
			order: []string{"d", "c", "a"}, reaches: []string{"a", "b", "c", "d"}},
		// c skips b, and b is on the replaces chain: OLM's order stops being useful below it,
		// yet the chain goes on to a.
		{name: "skipped bundle on the chain", entries: []declcfg.ChannelEntry{e("a", ""), e("b", "a"), e("c", "b", "b")},
			order: []string{"c", "a"}, reaches: []string{"a", "b", "c"}},
		// a skipRange draws no edge into a head's count: a, in c's range only, is a second head.
		{name: "skipRange", entries: []declcfg.ChannelEntry{e("a", ""), e("b", ""), {Name: "c", Replaces: "b", SkipRange: "<1.2.0"}}},
		{name: "skipRange on a chain", entries: []declcfg.ChannelEntry{e("a", ""), e("b", "a"), {Name: "c", Replaces: "b", SkipRange: "<1.1.0"}},
			order: []string{"c", "b", "a"}, reaches: []string{"a", "b", "c"}},
		{name: "loop", entries: []declcfg.ChannelEntry{e("b", "c"), e("c", "b"), e("d", "")},
			order: []string{"d"}, loops: [][]string{{"b", "c"}}, reaches: []string{"d"}},
		{name: "two heads", entries: []declcfg.ChannelEntry{e("a", ""), e("b", "")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := channel(tt.entries...)
			if got := ch.Order(); !reflect.DeepEqual(got, tt.order) {
				t.Errorf("Order = %v, want %v", got, tt.order)
			}
			if got := ch.Loops(); !reflect.DeepEqual(got, tt.loops) {
				t.Errorf("Loops = %v, want %v", got, tt.loops)
			}
			var reaches []string
			for _, name := range ch.EntryNames() {
				if ch.ReachesHead()[name] {
					reaches = append(reaches, name)
				}
			}
			if !reflect.DeepEqual(reaches, tt.reaches) {
				t.Errorf("ReachesHead = %v, want %v", reaches, tt.reaches)
			}
		})
	}
}

func TestEdges(t *testing.T) {
	ch := channel(e("a", ""), e("b", "a"), declcfg.ChannelEntry{Name: "c", Replaces: "b", Skips: []string{"a"}, SkipRange: ">=1.0.0 <1.2.0"})
	want := []index.Edge{
		{From: "a", To: "b", Kind: upgrade.Replaces},
		{From: "b", To: "c", Kind: upgrade.Replaces},
		{From: "a", To: "c", Kind: upgrade.Skips},
		{From: ">=1.0.0 <1.2.0", To: "c", Kind: upgrade.SkipRange},
	}
	if got := ch.Edges(); !reflect.DeepEqual(got, want) {
		t.Errorf("Edges = %v, want %v", got, want)
	}
	if got := ch.SkippedBy("a"); !reflect.DeepEqual(got, []string{"c"}) {
		t.Errorf("SkippedBy(a) = %v, want [c]", got)
	}
}

// TestTolerant indexes what opm refuses: a bundle without a version, a skipRange that does not
// parse, a channel of an undeclared package, a deprecation of an unknown one.
func TestTolerant(t *testing.T) {
	cfg := &declcfg.DeclarativeConfig{
		Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: "ghost", Name: "stable",
			Entries: []declcfg.ChannelEntry{{Name: "x", SkipRange: "not a range"}}}},
		Bundles:      []declcfg.Bundle{{Schema: declcfg.SchemaBundle, Package: "ghost", Name: "x"}},
		Deprecations: []declcfg.Deprecation{{Schema: declcfg.SchemaDeprecation, Package: "other"}},
	}
	c := index.New(cfg)
	p := c.Package("ghost")
	if p == nil || p.Decl != nil || p.DefaultChannel() != "" {
		t.Fatalf("ghost = %+v, want an undeclared package", p)
	}
	x := c.Channel("ghost", "stable").Entry("x")
	if x.Version != nil || x.RuleErr == nil {
		t.Errorf("entry x: version %v, rule error %v; want no version and an error", x.Version, x.RuleErr)
	}
	if c.Package("other") == nil || len(c.Package("other").Deprecations) != 1 {
		t.Errorf("the deprecation of an unknown package is not indexed")
	}
	if got := c.PackagesOf("x"); !reflect.DeepEqual(got, []string{"ghost"}) {
		t.Errorf("PackagesOf(x) = %v", got)
	}
}
