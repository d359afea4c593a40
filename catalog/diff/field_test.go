package diff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/diff"
	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

// field is the field catalog and its deps catalog, written once per test: old is the catalog as
// generated, deps the catalog that provides its dependencies.
type field struct {
	old, deps string
}

func newField(tb testing.TB) field {
	tb.Helper()
	dir := tb.TempDir()
	f := field{old: filepath.Join(dir, "old"), deps: filepath.Join(dir, "deps")}
	if err := synthcatalog.WriteFieldCatalogs(f.old, f.deps); err != nil {
		tb.Fatal(err)
	}
	return f
}

// changed writes the field catalog with change applied.
func (f field) changed(tb testing.TB, change func(*declcfg.DeclarativeConfig) error) string {
	tb.Helper()
	cfg, _ := synthcatalog.FieldConfigs()
	if err := change(cfg); err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(tb.TempDir(), "new")
	if err := declcfg.WriteFS(*cfg, dir, declcfg.WriteJSON, ".json"); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// release is a change that releases 9.0.0 of each package i.
func release(i ...int) func(*declcfg.DeclarativeConfig) error {
	return func(cfg *declcfg.DeclarativeConfig) error {
		for _, n := range i {
			if err := synthcatalog.AddFieldRelease(cfg, synthcatalog.FieldPackage(n), "9.0.0"); err != nil {
				return err
			}
		}
		return nil
	}
}

// simulateEnv is a cluster that has the deps catalog beside the field catalog.
func simulateEnv(f field) predict.Environment {
	return predict.Environment{Catalogs: []string{f.deps}}
}

func (f field) diff(t *testing.T, newDir string, withDeps bool) (*diff.Report, error) {
	t.Helper()
	d := &diff.Diff{Old: f.old, New: newDir, Breaking: true}
	if withDeps {
		d.Environment = simulateEnv(f)
	}
	return runJSON(t, d)
}

// The false positives the field's catalogs showed: a start stranded before the change, a start
// whose dependency only another catalog provides, a dependency nothing provides. None is a
// change; each is listed apart, with OLM's reason.
func TestFieldProblemsAlreadyPresentAreNoChange(t *testing.T) {
	f := newField(t)
	for _, tc := range []struct {
		name     string
		change   func(*declcfg.DeclarativeConfig) error
		withDeps bool
		// already is what every already-broken start's message says, and how many there are.
		already      string
		alreadyCount int
		// unchanged is how many packages are not compared: those identical, and all they
		// depend on too.
		unchanged int
	}{
		{name: "identical catalogs", change: release(), withDeps: true, unchanged: synthcatalog.FieldPackages},
		{name: "a start stranded before the change", change: release(synthcatalog.FieldStranding), withDeps: true,
			already: "already stranded before this change", alreadyCount: synthcatalog.StrandedAt + 1, unchanged: synthcatalog.FieldPackages - 1},
		// The package that requires the released one's API is compared too.
		{name: "a dependency only another catalog provides, that catalog not given", change: release(synthcatalog.FieldNeedsIssuer),
			already: "requires an operator providing an API with group: cert-manager.io, version: v1, kind: Issuer", alreadyCount: -1, unchanged: synthcatalog.FieldPackages - 2},
		{name: "a dependency nothing provides", change: release(synthcatalog.FieldNeedsNothingProvides), withDeps: true,
			already: "group: nothing.example.com, version: v1, kind: Missing", alreadyCount: -1, unchanged: synthcatalog.FieldPackages - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.diff(t, f.changed(t, tc.change), tc.withDeps)
			if err != nil || len(r.Breaking()) > 0 {
				t.Fatalf("error %v, breaking %+v: want none", err, r.Breaking())
			}
			for _, c := range r.AlreadyBroken {
				if c.Kind != diff.AlreadyStranded || c.Breaking || !strings.Contains(c.Message, tc.already) {
					t.Errorf("already broken %+v: want an already-stranded start saying %q", c, tc.already)
				}
			}
			if tc.alreadyCount >= 0 && len(r.AlreadyBroken) != tc.alreadyCount || tc.alreadyCount < 0 && len(r.AlreadyBroken) == 0 {
				t.Errorf("%d already-broken starts, want %d (-1: some)", len(r.AlreadyBroken), tc.alreadyCount)
			}
			if len(r.Unchanged) != tc.unchanged {
				t.Errorf("%d packages unchanged, want %d", len(r.Unchanged), tc.unchanged)
			}
		})
	}
}

// The regressions a change can make, each reported, and nothing else: a channel removed, a head
// lowered, a bundle removed with no edge past it, and a package whose own content is unchanged
// but whose dependency's provider stopped providing it.
func TestFieldRegressionsAreReported(t *testing.T) {
	f := newField(t)
	pkg := synthcatalog.FieldPackage
	sibling, provider := pkg(synthcatalog.FieldNeedsSibling), pkg(synthcatalog.FieldNeedsSibling+1)
	siblingStarts := 0
	newDir := f.changed(t, func(cfg *declcfg.DeclarativeConfig) error {
		dropChannel(cfg, pkg(0), "fast")
		// The head of stable goes back one release.
		stable := channel(cfg, pkg(5), "stable")
		head := stable.Entries[len(stable.Entries)-1].Name
		stable.Entries = stable.Entries[:len(stable.Entries)-1]
		cfg.Bundles = slices.DeleteFunc(cfg.Bundles, func(b declcfg.Bundle) bool { return b.Name == head })
		// 0.0.6 is pulled and 0.0.7 replaces 0.0.5 instead: users on 0.0.6 have nowhere to go.
		stable = channel(cfg, pkg(10), "stable")
		stable.Entries = slices.DeleteFunc(stable.Entries, func(e declcfg.ChannelEntry) bool { return e.Name == synthcatalog.BundleName(pkg(10), "0.0.6") })
		for i := range stable.Entries {
			if stable.Entries[i].Name == synthcatalog.BundleName(pkg(10), "0.0.7") {
				stable.Entries[i].Replaces = synthcatalog.BundleName(pkg(10), "0.0.5")
			}
		}
		cfg.Bundles = slices.DeleteFunc(cfg.Bundles, func(b declcfg.Bundle) bool { return b.Name == synthcatalog.BundleName(pkg(10), "0.0.6") })
		// The provider of the sibling's required API stops providing it.
		for i := range cfg.Bundles {
			if cfg.Bundles[i].Package == provider {
				cfg.Bundles[i].Properties = slices.DeleteFunc(cfg.Bundles[i].Properties, func(p property.Property) bool { return p.Type == property.TypeGVK })
			}
		}
		siblingStarts = len(channel(cfg, sibling, "stable").Entries)
		return release(20)(cfg)
	})
	r, err := f.diff(t, newDir, true)
	if err == nil || !strings.Contains(err.Error(), "breaking change(s)") {
		t.Errorf("error %v: want the breaking changes to fail the run", err)
	}
	got := map[string]int{}
	for _, c := range r.Breaking() {
		got[fmt.Sprintf("%s %s %s", c.Kind, c.Package, c.Channel)]++
	}
	want := map[string]int{
		"channel-removed " + pkg(0) + " fast": 1,
		"head-lowered " + pkg(5) + " stable":  1,
		"stranded " + pkg(10) + " stable":     1,
		"stranded " + sibling + " stable":     siblingStarts,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("breaking changes %v, want %v", got, want)
	}
	if slices.Contains(r.Unchanged, sibling) || !slices.Contains(r.Unchanged, pkg(30)) {
		t.Errorf("unchanged %v: want the sibling compared (its provider changed) and package 30 not", r.Unchanged)
	}
}

// A failure to simulate is no verdict: the diff fails, and reports nothing stranded, whether the
// context ends while the catalogs load or while OLM is asked.
func TestFieldDiffFailsOnSimulatorErrors(t *testing.T) {
	f := newField(t)
	newDir := f.changed(t, release(1))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	d := &diff.Diff{Old: f.old, New: newDir, Breaking: true, Output: "json", Out: &out}
	if err := d.Run(cancelled); !errors.Is(err, context.Canceled) || out.Len() > 0 {
		t.Errorf("error %v, output %q: want the cancellation and nothing printed", err, out.String())
	}

	o, n, j := servedWhole(t, f.old, newDir, predict.Environment{})
	if r, err := diff.Compare(cancelled, f.old, newDir, o, n, diff.Changed(o, n, true), j); !errors.Is(err, context.Canceled) || r != nil {
		t.Errorf("report %+v, error %v: want the cancellation and no report", r, err)
	}
}

// servedWhole is the two catalogs, and OLM v0's judge over a simulator serving every package of
// them and of env's.
func servedWhole(t *testing.T, oldDir, newDir string, env predict.Environment) (o, n *index.Catalog, j olmv0.Judge) {
	t.Helper()
	ctx := context.Background()
	var opened []predict.Catalog
	for _, c := range []struct{ name, dir string }{{"old", oldDir}, {"new", newDir}} {
		l, err := load.Open(ctx, c.dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		o := predict.Loaded(l)
		o.Name = c.name
		opened = append(opened, o)
	}
	cluster, err := env.Open(ctx, "old", "new")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	catalogs, err := olmv0.Load(ctx, cluster, olmv0.Source(opened))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := catalogs.Serve(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return catalogs.Index("old"), catalogs.Index("new"), olmv0.Judge{Simulator: sim, Old: "old", New: "new"}
}

// diff serves only the packages that changed and what they depend on. Its report must be the
// one a simulator serving everything gives, for changes to packages with every kind of
// dependency: on an API of a package that did not change, on another catalog's package, on
// nothing, and for a package whose starts were stranded before.
func TestFieldScopedServingAnswersAsWhole(t *testing.T) {
	f := newField(t)
	// Package 12 needs the API of 13, which does not change; 15 needs the package cert-manager of
	// the deps catalog.
	newDir := f.changed(t, release(synthcatalog.FieldStranding, synthcatalog.FieldNeedsSibling+10,
		synthcatalog.FieldNeedsCertManager+8, synthcatalog.FieldNeedsNothingProvides))
	d := &diff.Diff{Old: f.old, New: newDir, Environment: simulateEnv(f), Output: "json"}
	scoped, err := runJSON(t, d)
	if err != nil {
		t.Fatal(err)
	}
	o, n, j := servedWhole(t, f.old, newDir, simulateEnv(f))
	report, err := diff.Compare(context.Background(), f.old, newDir, o, n, diff.Changed(o, n, true), j)
	if err != nil {
		t.Fatal(err)
	}
	// As the verb prints it.
	var whole *diff.Report
	if raw, err := json.Marshal(report); err != nil || json.Unmarshal(raw, &whole) != nil {
		t.Fatalf("the report does not round-trip through JSON: %v", err)
	}
	if diff := cmp.Diff(whole, scoped); diff != "" {
		t.Errorf("the report with only the changed packages served differs from the one with every package served (-whole +scoped):\n%s", diff)
	}
	if len(scoped.Changes) == 0 || len(scoped.Unchanged) == synthcatalog.FieldPackages {
		t.Errorf("the change compared nothing: %d changes, %d packages unchanged", len(scoped.Changes), len(scoped.Unchanged))
	}
}
