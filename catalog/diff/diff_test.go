package diff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/diff"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

const (
	overlap = "synthetic-skiprange-overlap"
	middle  = "synthetic-skipped-middle"
	shared  = "synthetic-shared-channels"
)

func base(t *testing.T) *declcfg.DeclarativeConfig {
	t.Helper()
	cfg, err := synthcatalog.Config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func write(t *testing.T, cfg *declcfg.DeclarativeConfig) string {
	t.Helper()
	dir := t.TempDir()
	if err := declcfg.WriteFS(*cfg, dir, declcfg.WriteJSON, ".json"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func channel(cfg *declcfg.DeclarativeConfig, pkg, name string) *declcfg.Channel {
	for i := range cfg.Channels {
		if cfg.Channels[i].Package == pkg && cfg.Channels[i].Name == name {
			return &cfg.Channels[i]
		}
	}
	return nil
}

// dropChannel removes a channel and the bundles no other channel has, which opm refuses.
func dropChannel(cfg *declcfg.DeclarativeConfig, pkg, name string) {
	cfg.Channels = slices.DeleteFunc(cfg.Channels, func(c declcfg.Channel) bool { return c.Package == pkg && c.Name == name })
	cfg.Bundles = slices.DeleteFunc(cfg.Bundles, func(b declcfg.Bundle) bool {
		return !slices.ContainsFunc(cfg.Channels, func(c declcfg.Channel) bool {
			return slices.ContainsFunc(c.Entries, func(e declcfg.ChannelEntry) bool { return e.Name == b.Name })
		})
	})
}

func dropBundle(cfg *declcfg.DeclarativeConfig, pkg, version string) {
	name := synthcatalog.BundleName(pkg, version)
	cfg.Bundles = slices.DeleteFunc(cfg.Bundles, func(b declcfg.Bundle) bool { return b.Name == name })
	for i := range cfg.Channels {
		cfg.Channels[i].Entries = slices.DeleteFunc(cfg.Channels[i].Entries, func(e declcfg.ChannelEntry) bool { return e.Name == name })
	}
}

func addBundle(t *testing.T, cfg *declcfg.DeclarativeConfig, pkg, channelName, version, replaces string) {
	t.Helper()
	name := synthcatalog.BundleName(pkg, version)
	other := base(t)
	for _, b := range other.Bundles {
		if b.Package == pkg {
			// Any bundle of the package, renamed: its version property is what the diff reads.
			b.Name = name
			for i, p := range b.Properties {
				if p.Type == "olm.package" {
					b.Properties[i].Value = []byte(`{"packageName":"` + pkg + `","version":"` + version + `"}`)
				}
			}
			cfg.Bundles = append(cfg.Bundles, b)
			break
		}
	}
	ch := channel(cfg, pkg, channelName)
	ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: name, Replaces: synthcatalog.BundleName(pkg, replaces)})
}

// run diffs base against the changed catalog with --breaking, as `make verify` does.
func run(t *testing.T, change func(*declcfg.DeclarativeConfig)) (*diff.Report, error) {
	t.Helper()
	newCfg := base(t)
	change(newCfg)
	return runJSON(t, &diff.Diff{Old: write(t, base(t)), New: write(t, newCfg), Breaking: true})
}

// runJSON runs the verb with its output in JSON, and reads the report back.
func runJSON(t *testing.T, d *diff.Diff) (*diff.Report, error) {
	t.Helper()
	var out bytes.Buffer
	d.Output, d.Out = "json", &out
	err := d.Run(context.Background())
	var r diff.Report
	if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
		t.Fatalf("output %q: %v (run: %v)", out.String(), jerr, err)
	}
	return &r, err
}

func TestBreakingChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*declcfg.DeclarativeConfig)
		want   []string // kind package channel bundle: message fragment
	}{
		{"package removed", func(c *declcfg.DeclarativeConfig) {
			c.Packages = slices.DeleteFunc(c.Packages, func(p declcfg.Package) bool { return p.Name == middle })
			c.Channels = slices.DeleteFunc(c.Channels, func(ch declcfg.Channel) bool { return ch.Package == middle })
			c.Bundles = slices.DeleteFunc(c.Bundles, func(b declcfg.Bundle) bool { return b.Package == middle })
		}, []string{"package-removed " + middle + ": package synthetic-skipped-middle removed"}},
		{"channel removed", func(c *declcfg.DeclarativeConfig) { dropChannel(c, shared, "fast") },
			[]string{"channel-removed " + shared + " fast: channel fast removed: its Subscriptions no longer resolve"}},
		{"channel renamed", func(c *declcfg.DeclarativeConfig) { channel(c, shared, "fast").Name = "rapid" },
			[]string{"channel-removed " + shared + " fast: rapid, new, has the same bundles"}},
		{"default channel gone", func(c *declcfg.DeclarativeConfig) {
			dropChannel(c, shared, "stable")
			for i := range c.Packages {
				if c.Packages[i].Name == shared {
					c.Packages[i].DefaultChannel = "fast"
				}
			}
			c.Deprecations = nil
		}, []string{
			"default-channel-removed " + shared + ": default channel stable no longer exists (the default is now fast)",
			"channel-removed " + shared + " stable: channel stable removed",
		}},
		{"head lowered", func(c *declcfg.DeclarativeConfig) { dropBundle(c, overlap, "1.3.0") },
			[]string{"head-lowered " + overlap + " stable: moved down, synthetic-skiprange-overlap.v1.3.0 (1.3.0) -> synthetic-skiprange-overlap.v1.2.0 (1.2.0)"}},
		{"bundle removed with no edge past it", func(c *declcfg.DeclarativeConfig) {
			dropBundle(c, middle, "1.2.0")
			ch := channel(c, middle, "stable")
			for i := range ch.Entries {
				if ch.Entries[i].Name == synthcatalog.BundleName(middle, "1.3.0") {
					ch.Entries[i].Replaces = synthcatalog.BundleName(middle, "1.1.0")
				}
			}
		}, []string{"stranded " + middle + " stable synthetic-skipped-middle.v1.2.0: it is removed, and users on it reached the head synthetic-skipped-middle.v1.3.0 and are now stranded at synthetic-skipped-middle.v1.2.0: no bundle of channel \"stable\" replaces or skips synthetic-skipped-middle.v1.2.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := run(t, tc.change)
			if err == nil || !strings.Contains(err.Error(), "breaking change(s)") {
				t.Errorf("error %v: want the breaking changes to fail the run", err)
			}
			var got []string
			for _, c := range r.Changes {
				if !c.Breaking {
					t.Errorf("--breaking printed a harmless change: %+v", c)
				}
				got = append(got, strings.TrimSpace(strings.Join([]string{string(c.Kind), c.Package, c.Channel, c.Bundle}, " "))+": "+c.Message)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("breaking changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for i := range got {
				prefix, fragment, _ := strings.Cut(tc.want[i], ": ")
				if !strings.HasPrefix(got[i], prefix+": ") || !strings.Contains(got[i], fragment) {
					t.Errorf("change %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestHarmlessChangesPass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*declcfg.DeclarativeConfig)
		kinds  []diff.Kind
	}{
		{"new head", func(c *declcfg.DeclarativeConfig) { addBundle(t, c, overlap, "stable", "1.4.0", "1.3.0") },
			[]diff.Kind{diff.BundleAdded, diff.EdgeAdded, diff.HeadMoved}},
		{"new channel", func(c *declcfg.DeclarativeConfig) {
			ch := *channel(c, overlap, "stable")
			ch.Name = "candidate"
			c.Channels = append(c.Channels, ch)
		}, []diff.Kind{diff.ChannelAdded}},
		{"tail removed, its successor still replaces it", func(c *declcfg.DeclarativeConfig) { dropBundle(c, middle, "1.0.0") },
			[]diff.Kind{diff.BundleRemoved}},
		{"deprecation added", func(c *declcfg.DeclarativeConfig) {
			c.Deprecations = append(c.Deprecations, declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: overlap,
				Entries: []declcfg.DeprecationEntry{{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: "gone soon"}}})
		}, []diff.Kind{diff.DeprecationAdded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r, err := run(t, tc.change); err != nil || len(r.Changes) != 0 {
				t.Fatalf("--breaking: error %v, changes %+v: want none", err, r.Changes)
			}
			newCfg := base(t)
			tc.change(newCfg)
			var out bytes.Buffer
			d := &diff.Diff{Old: write(t, base(t)), New: write(t, newCfg), Output: "json", Out: &out}
			if err := d.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var r diff.Report
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			var kinds []diff.Kind
			for _, c := range r.Changes {
				kinds = append(kinds, c.Kind)
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("changes %v, want %v", kinds, tc.kinds)
			}
		})
	}
}

func TestNoChanges(t *testing.T) {
	dir := write(t, base(t))
	var out bytes.Buffer
	d := &diff.Diff{Old: dir, New: write(t, base(t)), Output: "text", Out: &out}
	if err := d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "no changes\n") {
		t.Errorf("output %q", out.String())
	}
}

func TestPictureMarksChanges(t *testing.T) {
	newCfg := base(t)
	dropBundle(newCfg, overlap, "1.0.0")
	addBundle(t, newCfg, overlap, "stable", "1.4.0", "1.3.0")
	var out bytes.Buffer
	d := &diff.Diff{Old: write(t, base(t)), New: write(t, newCfg), Output: "dot", Out: &out}
	if err := d.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	dot := out.String()
	for _, want := range []string{
		`"stable/synthetic-skiprange-overlap.v1.4.0" [label="1.4.0\nhead\nadded", style="rounded,bold", color="#1a7f37"`,
		`"stable/synthetic-skiprange-overlap.v1.0.0" [label="1.0.0\nremoved", style="rounded,dashed", color="#cf222e"`,
		`"stable/synthetic-skiprange-overlap.v1.0.0" -> "stable/synthetic-skiprange-overlap.v1.1.0" [label="replaces removed", style=dashed, color="#cf222e"`,
		`"stable/synthetic-skiprange-overlap.v1.3.0" -> "stable/synthetic-skiprange-overlap.v1.4.0" [label="replaces added", style=solid, color="#1a7f37"`,
	} {
		if !strings.Contains(dot, want) {
			t.Errorf("picture lacks %s:\n%s", want, dot)
		}
	}
}

// Two trees of per-minor catalogs are compared minor by minor: a minor whose catalog is gone
// strands the clusters at it, a breaking change inside one minor is named under it, and a new
// minor is no change for anyone.
func TestDiffTreesMinorByMinor(t *testing.T) {
	root := t.TempDir()
	old, cur := root+"/old", root+"/new"
	for _, m := range []string{"v4.10", "v4.11"} {
		writeAt(t, base(t), old+"/"+m)
	}
	changed := base(t)
	dropBundle(changed, middle, "1.3.0")
	writeAt(t, changed, cur+"/v4.11")
	writeAt(t, base(t), cur+"/v4.12")
	var out bytes.Buffer
	err := (&diff.Diff{Old: old, New: cur, Breaking: true, Output: "text", Out: &out}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "the v4.10 catalog is gone") || !strings.Contains(err.Error(), "breaking change(s) from "+old+"/v4.11 to "+cur+"/v4.11") {
		t.Errorf("error %v: want the v4.10 catalog gone and v4.11's breaking change", err)
	}
	for _, want := range []string{
		"! the v4.10 catalog is gone: clusters at 4.10 that installed from it have no catalog to upgrade from",
		old + "/v4.11 -> " + cur + "/v4.11\npackage " + middle,
		"+ the v4.12 catalog is new",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// A tree is compared with a tree only.
	err = (&diff.Diff{Old: old, New: old + "/v4.11", Output: "text", Out: &out}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "is one catalog, but the other is a tree of per-minor catalogs") {
		t.Errorf("a tree against one catalog: %v", err)
	}
}

func writeAt(t *testing.T, cfg *declcfg.DeclarativeConfig, dir string) {
	t.Helper()
	if err := declcfg.WriteFS(*cfg, dir, declcfg.WriteJSON, ".json"); err != nil {
		t.Fatal(err)
	}
}

// A package whose bundles require a label (olm.label.required) is compared when the label's
// provider changed, as OLM's resolver may pull the provider in; a label nobody provides leaves it
// unchanged.
func TestLabelRequiredDecidesUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		provided  string
		unchanged bool
	}{
		{"the changed package provides the label", "fast", false},
		{"no package provides the label", "slow", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labelled := func(c *declcfg.DeclarativeConfig) {
				for i, b := range c.Bundles {
					switch b.Package {
					case shared:
						c.Bundles[i].Properties = append(b.Properties, property.Property{Type: "olm.label.required", Value: []byte(`{"label":"fast"}`)})
					case overlap:
						c.Bundles[i].Properties = append(b.Properties, property.Property{Type: "olm.label", Value: []byte(`{"label":"` + tc.provided + `"}`)})
					}
				}
			}
			oldCfg, newCfg := base(t), base(t)
			labelled(oldCfg)
			labelled(newCfg)
			addBundle(t, newCfg, overlap, "stable", "1.4.0", "1.3.0")
			r, err := runJSON(t, &diff.Diff{Old: write(t, oldCfg), New: write(t, newCfg)})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(r.Unchanged, shared); got != tc.unchanged {
				t.Errorf("%s unchanged: %v, want %v (unchanged: %v)", shared, got, tc.unchanged, r.Unchanged)
			}
		})
	}
}
