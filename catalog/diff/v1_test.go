package diff_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/csi-olm/csi-olm/catalog/diff"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/internal/option"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

// runV1 diffs base against the changed catalog with --breaking --olm v1.
func runV1(t *testing.T, change func(*declcfg.DeclarativeConfig)) (*diff.Report, error) {
	t.Helper()
	newCfg := base(t)
	change(newCfg)
	return runJSON(t, &diff.Diff{Old: write(t, base(t)), New: write(t, newCfg), Breaking: true, OLM: "v1"})
}

// deprecate deprecates a bundle of a package by version.
func deprecate(c *declcfg.DeclarativeConfig, pkg, version string) {
	c.Deprecations = append(c.Deprecations, declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: pkg, Entries: []declcfg.DeprecationEntry{{
		Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: synthcatalog.BundleName(pkg, version)}, Message: "broken",
	}}})
}

// The v0 cases of TestBreakingChanges, judged for ClusterExtensions: those naming the channel,
// and those naming none, which follow every channel's edges.
func TestBreakingChangesV1(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*declcfg.DeclarativeConfig)
		want   []string // kind package channel bundle: message fragment
	}{
		{"package removed", func(c *declcfg.DeclarativeConfig) {
			c.Packages = slices.DeleteFunc(c.Packages, func(p declcfg.Package) bool { return p.Name == middle })
			c.Channels = slices.DeleteFunc(c.Channels, func(ch declcfg.Channel) bool { return ch.Package == middle })
			c.Bundles = slices.DeleteFunc(c.Bundles, func(b declcfg.Bundle) bool { return b.Package == middle })
		}, []string{"package-removed " + middle + ": package synthetic-skipped-middle removed: its ClusterExtensions no longer resolve"}},
		// fast's bundles above stable's go with it: ClusterExtensions on them, naming no
		// channel, have nothing left that upgrades from them; from 1.0.0 and 1.1.0, stable's
		// 1.1.0 is the new latest.
		{"channel removed", func(c *declcfg.DeclarativeConfig) { dropChannel(c, shared, "fast") }, []string{
			"channel-removed " + shared + " fast: channel fast removed: ClusterExtensions naming only it no longer resolve",
			"stranded " + shared + " synthetic-shared-channels.v1.2.0: synthetic-shared-channels.v1.2.0 in any channel: it is removed, and users on it reached the latest synthetic-shared-channels.v2.0.0 and are now stranded at synthetic-shared-channels.v1.2.0: operator-controller cannot resolve the ClusterExtension (Progressing, Retrying): error upgrading from currently installed version \"1.2.0\": no bundles found for package \"synthetic-shared-channels\"",
			"stranded " + shared + " synthetic-shared-channels.v2.0.0: in any channel: it is removed",
		}},
		// operator-controller does not read the default channel: only the channel's removal
		// breaks.
		{"default channel gone", func(c *declcfg.DeclarativeConfig) {
			dropChannel(c, shared, "stable")
			for i := range c.Packages {
				if c.Packages[i].Name == shared {
					c.Packages[i].DefaultChannel = "fast"
				}
			}
			c.Deprecations = nil
		}, []string{"channel-removed " + shared + " stable: channel stable removed"}},
		{"head lowered", func(c *declcfg.DeclarativeConfig) { dropBundle(c, overlap, "1.3.0") }, []string{
			"head-lowered " + overlap + " stable: moved down, synthetic-skiprange-overlap.v1.3.0 (1.3.0) -> synthetic-skiprange-overlap.v1.2.0 (1.2.0)",
			"stranded " + overlap + " synthetic-skiprange-overlap.v1.3.0: in any channel: it is removed, and users on it reached the latest synthetic-skiprange-overlap.v1.3.0 and are now stranded at synthetic-skiprange-overlap.v1.3.0",
		}},
		{"bundle removed with no edge past it", func(c *declcfg.DeclarativeConfig) {
			dropBundle(c, middle, "1.2.0")
			ch := channel(c, middle, "stable")
			for i := range ch.Entries {
				if ch.Entries[i].Name == synthcatalog.BundleName(middle, "1.3.0") {
					ch.Entries[i].Replaces = synthcatalog.BundleName(middle, "1.1.0")
				}
			}
		}, []string{
			"stranded " + middle + " stable synthetic-skipped-middle.v1.2.0: in channel stable: it is removed, and users on it reached the latest synthetic-skipped-middle.v1.3.0 and are now stranded at synthetic-skipped-middle.v1.2.0: operator-controller cannot resolve",
			"stranded " + middle + " synthetic-skipped-middle.v1.2.0: in any channel: it is removed",
		}},
		// Harmless for OLM v0, which installs deprecated bundles; operator-controller ranks them
		// last, so the latest moves down to 1.2.0 under users of 2.0.0.
		{"head deprecated", func(c *declcfg.DeclarativeConfig) { deprecate(c, shared, "2.0.0") }, []string{
			"head-lowered " + shared + " fast synthetic-shared-channels.v2.0.0: synthetic-shared-channels.v2.0.0 in channel fast: the latest moved down to synthetic-shared-channels.v1.2.0 (1.2.0); users on synthetic-shared-channels.v2.0.0 keep it",
			"head-lowered " + shared + " synthetic-shared-channels.v2.0.0: in any channel: the latest moved down",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := runV1(t, tc.change)
			if err == nil || !strings.Contains(err.Error(), "breaking change(s)") {
				t.Errorf("error %v: want the breaking changes to fail the run", err)
			}
			var got []string
			for _, c := range r.Changes {
				if !c.Breaking {
					t.Errorf("--breaking printed a harmless change: %+v", c)
				}
				got = append(got, strings.TrimSpace(strings.Join(strings.Fields(strings.Join([]string{string(c.Kind), c.Package, c.Channel, c.Bundle}, " ")), " "))+": "+c.Message)
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

func TestHarmlessChangesPassV1(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*declcfg.DeclarativeConfig)
	}{
		{"new head", func(c *declcfg.DeclarativeConfig) { addBundle(t, c, overlap, "stable", "1.4.0", "1.3.0") }},
		{"tail removed, its successor still replaces it", func(c *declcfg.DeclarativeConfig) { dropBundle(c, middle, "1.0.0") }},
		// A deprecated bundle below the latest: operator-controller passes it over on the way up.
		{"middle deprecated", func(c *declcfg.DeclarativeConfig) { deprecate(c, overlap, "1.2.0") }},
		{"default channel changed", func(c *declcfg.DeclarativeConfig) {
			for i := range c.Packages {
				if c.Packages[i].Name == shared {
					c.Packages[i].DefaultChannel = "fast"
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r, err := runV1(t, tc.change); err != nil || len(r.Changes) != 0 {
				t.Fatalf("--breaking --olm v1: error %v, changes %+v: want none", err, r.Changes)
			}
		})
	}
}

// The committed catalogs of the newest minor, community then certified as the next version of
// it: for OLM v1 the package's bundles change names, and every community version goes to the
// certified release through its skipRange.
func TestDiffV1CommittedCatalogs(t *testing.T) {
	var out bytes.Buffer
	d := &diff.Diff{Old: "../community/v4.11", New: "../certified/v4.11", Breaking: true, OLM: "v1", Output: "text", Out: &out}
	if err := d.Run(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if want := "../community/v4.11 -> ../certified/v4.11\nno breaking changes\n"; out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

func TestDiffV1RefusesV0Options(t *testing.T) {
	for _, tc := range []struct {
		d     diff.Diff
		field string
		want  string
	}{
		{diff.Diff{OLM: "v9"}, "OLM", `unknown OLM "v9"`},
		{diff.Diff{OLM: "v1", Environment: predict.Environment{Packages: []string{"cert-manager@1.14.4"}}}, "Environment.Packages", "operator-controller resolves no dependencies"},
	} {
		d := tc.d
		d.Old, d.New, d.Output, d.Out = "../community/v4.11", "../certified/v4.11", "text", &bytes.Buffer{}
		err := d.Run(context.Background())
		var oe *option.Error
		if !errors.As(err, &oe) || oe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one about %s saying %q", tc.d, err, tc.field, tc.want)
		}
	}
}
