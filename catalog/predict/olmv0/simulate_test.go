package olmv0_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
	"github.com/csi-olm/csi-olm/internal/upgrade"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

func dirCatalog(name, dir string) predict.Catalog {
	return predict.Catalog{Name: name, Dir: dir, FS: os.DirFS(dir)}
}

func newSimulator(t *testing.T, catalogs ...predict.Catalog) *olmv0.Simulator {
	t.Helper()
	s, err := olmv0.New(context.Background(), catalogs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func synthetic(t *testing.T) predict.Catalog {
	t.Helper()
	dir := t.TempDir()
	if err := synthcatalog.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dirCatalog("synthetic", dir)
}

// route is a path as "v1 -replaces-> v2 -skipRange-> v3", the bundles shortened to their versions.
func route(p *olmv0.Path) string {
	short := func(name string) string { return name[strings.LastIndex(name, ".v")+2:] }
	out := short(p.Start.Name)
	for _, s := range p.Steps {
		out += " -" + string(s.Edge) + "-> " + short(s.To)
	}
	return out
}

// The expected routes follow OLM's rules as the package doc states them; TestSimulateMatchesOLM
// in test/e2e checks the same starts against OLM itself.
func TestSimulate(t *testing.T) {
	// The newest minor's catalogs, and the older minors' certified ones that clusters upgrading
	// to it installed from.
	s := newSimulator(t, dirCatalog("certified", "../../certified/v4.11"), dirCatalog("community", "../../community/v4.11"),
		dirCatalog("certified-v4.10", "../../certified/v4.10"), dirCatalog("certified-v4.9", "../../certified/v4.9"),
		dirCatalog("certified-v4.5", "../../certified/v4.5"), synthetic(t))
	ebs, manila := "aws-ebs-csi-driver-operator", "manila-csi-driver-operator"
	for _, tc := range []struct {
		catalog  string
		start    olmv0.Start
		route    string
		stranded string
		passed   []string
	}{
		{catalog: "community", start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"}, route: "0.0.6 -replaces-> 0.0.7 -replaces-> 0.0.8"},
		{catalog: "community", start: olmv0.Start{CSV: "aws-efs-operator.v0.0.8"}, route: "0.0.8"},
		// The source switch: every community version goes straight to the minor's release.
		{catalog: "certified", start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6", InstalledFrom: "community"}, route: "0.0.6 -skipRange-> 4.11.0"},
		{catalog: "certified", start: olmv0.Start{CSV: "aws-efs-operator.v0.0.8", InstalledFrom: "community"}, route: "0.0.8 -skipRange-> 4.11.0"},
		// A cluster upgraded from 4.10, its catalog now 4.11's: the release of 4.10 goes to 4.11's.
		{catalog: "certified", start: olmv0.Start{CSV: "aws-efs-csi-driver-operator.v4.10.0", InstalledFrom: "certified-v4.10"}, route: "4.10.0 -skipRange-> 4.11.0"},
		{catalog: "certified", start: olmv0.Start{CSV: "aws-efs-csi-driver-operator.v4.9.0", InstalledFrom: "certified-v4.9"}, route: "4.9.0 -skipRange-> 4.11.0"},
		{catalog: "certified-v4.5", start: olmv0.Start{CSV: "aws-ebs-csi-driver-operator.v4.5.0", Package: ebs}, route: "4.5.0"},
		{catalog: "certified-v4.5", start: olmv0.Start{CSV: "manila-csi-driver-operator.v4.5.0", Package: manila}, route: "4.5.0"},

		// skipRange overlapping replaces: the candidate nearest the head wins, whatever the field.
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-skiprange-overlap.v1.0.0"}, route: "1.0.0 -skipRange-> 1.2.0 -replaces-> 1.3.0",
			passed: []string{"synthetic-skiprange-overlap.v1.1.0: further from the head"}},
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-skiprange-overlap.v1.1.0"}, route: "1.1.0 -skipRange-> 1.3.0",
			passed: []string{"synthetic-skiprange-overlap.v1.2.0: further from the head"}},
		// A skipped bundle is never an upgrade target, though it replaces the installed one.
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-skipped-middle.v1.0.0"}, route: "1.0.0 -replaces-> 1.2.0 -replaces-> 1.3.0",
			passed: []string{"synthetic-skipped-middle.v1.1.0: skipped by synthetic-skipped-middle.v1.2.0"}},
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-skipped-middle.v1.1.0"}, route: "1.1.0 -skips-> 1.2.0 -replaces-> 1.3.0"},
		// Two channels with the same bundles: the channel decides where the path goes.
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-shared-channels.v1.0.0"}, route: "1.0.0 -replaces-> 1.1.0"},
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-shared-channels.v1.0.0", Channel: "fast"}, route: "1.0.0 -skipRange-> 2.0.0",
			passed: []string{"synthetic-shared-channels.v1.1.0: further from the head"}},
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-shared-channels.v1.1.0", Channel: "fast"}, route: "1.1.0 -skipRange-> 2.0.0",
			passed: []string{"synthetic-shared-channels.v1.2.0: further from the head"}},
		// An open-ended skipRange holds its own bundle: OLM keeps the head it has.
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-open-skiprange.v1.0.0"}, route: "1.0.0 -replaces-> 1.1.0"},
		{catalog: "synthetic", start: olmv0.Start{CSV: "synthetic-open-skiprange.v1.1.0"}, route: "1.1.0"},
	} {
		t.Run(tc.catalog+"/"+tc.start.CSV+"/"+tc.start.Channel, func(t *testing.T) {
			p, err := s.Simulate(context.Background(), tc.catalog, tc.start)
			if err != nil {
				t.Fatal(err)
			}
			if got := route(p); got != tc.route {
				t.Errorf("route %q, want %q", got, tc.route)
			}
			if want := map[bool]predict.Result{true: predict.Stranded, false: predict.AtHead}[tc.stranded != ""]; p.Result != want {
				t.Errorf("result %s, want %s", p.Result, want)
			}
			if !strings.Contains(p.Stranded, tc.stranded) || (tc.stranded == "") != (p.Stranded == "") {
				t.Errorf("stranded %q, want %q", p.Stranded, tc.stranded)
			}
			var passed []string
			for _, st := range p.Steps {
				for _, c := range st.Passed {
					passed = append(passed, c.Bundle+": "+c.Why)
				}
			}
			if len(passed) != len(tc.passed) {
				t.Fatalf("passed over %q, want %q", passed, tc.passed)
			}
			for i := range passed {
				if !strings.HasPrefix(passed[i], tc.passed[i]) {
					t.Errorf("passed over %q, want %q", passed[i], tc.passed[i])
				}
			}
		})
	}
}

func TestSimulateReportsDeprecations(t *testing.T) {
	s := newSimulator(t, dirCatalog("community", "../../community/v4.11"), synthetic(t))
	p, err := s.Simulate(context.Background(), "community", olmv0.Start{CSV: "aws-efs-operator.v0.0.7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 || len(p.Steps[0].Deprecations) != 1 || !strings.HasPrefix(p.Steps[0].Deprecations[0], "olm.package/aws-efs-operator: The community aws-efs-operator is deprecated") {
		t.Errorf("steps %+v: want the package's deprecation on the step to 0.0.8", p.Steps)
	}
	// A deprecated channel still upgrades: OLM only reports it.
	p, err = s.Simulate(context.Background(), "synthetic", olmv0.Start{CSV: "synthetic-shared-channels.v1.0.0", Channel: "stable"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 || p.Steps[0].Edge != upgrade.Replaces || len(p.Steps[0].Deprecations) != 1 || !strings.Contains(p.Steps[0].Deprecations[0], "subscribe to fast") {
		t.Errorf("steps %+v: want the upgrade to 1.1.0 with the channel's deprecation", p.Steps)
	}
}

func TestSimulateRefusesBadStarts(t *testing.T) {
	s := newSimulator(t, dirCatalog("certified", "../../certified/v4.11"), dirCatalog("community", "../../community/v4.11"))
	for _, tc := range []struct {
		target string
		start  olmv0.Start
		want   string
	}{
		{"certified", olmv0.Start{CSV: "aws-efs-operator.v0.0.6"}, `CSV "aws-efs-operator.v0.0.6" is not in catalog ../../certified/v4.11`},
		{"certified", olmv0.Start{CSV: "aws-efs-operator.v0.0.6", InstalledFrom: "nowhere"}, `no catalog named "nowhere"`},
		{"certified", olmv0.Start{CSV: "aws-efs-csi-driver-operator.v4.11.0", Channel: "fast"}, `package "aws-efs-operator" of catalog ../../certified/v4.11 has no channel "fast" (channels: 4.10, 4.11, 4.9, stable)`},
		{"certified", olmv0.Start{CSV: "x.v1", Package: "absent"}, `package "absent" is not in catalog ../../certified/v4.11`},
		{"elsewhere", olmv0.Start{CSV: "x.v1"}, `no catalog named "elsewhere"`},
	} {
		_, err := s.Simulate(context.Background(), tc.target, tc.start)
		var se *predict.StartError
		if err == nil || err.Error() != tc.want || !errors.As(err, &se) {
			t.Errorf("%+v: error %v, want a StartError %q", tc.start, err, tc.want)
		}
	}
}

func TestSimulateRefusesBrokenCatalog(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte("schema: olm.package\nname: [broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := olmv0.New(context.Background(), dirCatalog("broken", dir))
	var be *predict.BrokenCatalogError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "cannot simulate "+dir) || !strings.Contains(err.Error(), "catalog.yaml") {
		t.Fatalf("error %v: want one naming the catalog and its file", err)
	}
}

// The cross-check on the test bed asks from several goroutines at once.
func TestSimulateConcurrently(t *testing.T) {
	s := newSimulator(t, synthetic(t))
	starts := s.Starts("synthetic")
	want := map[string]string{}
	for _, st := range starts {
		p, err := s.Simulate(context.Background(), "synthetic", st)
		if err != nil {
			t.Fatal(err)
		}
		want[st.Channel+"/"+st.CSV] = route(p)
	}
	errs := make(chan error, len(starts)*4)
	for range 4 {
		for _, st := range starts {
			go func() {
				p, err := s.Simulate(context.Background(), "synthetic", st)
				if err == nil && route(p) != want[st.Channel+"/"+st.CSV] {
					err = fmt.Errorf("%s/%s: route %q, alone %q", st.Channel, st.CSV, route(p), want[st.Channel+"/"+st.CSV])
				}
				errs <- err
			}()
		}
	}
	for range len(starts) * 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// An upgrade that needs a package only a second catalog carries: OLM installs the dependency
// from there, beside the upgrade, and without that catalog cannot resolve the Subscription.
// TestSimulateMatchesOLM in test/e2e checks the same starts against OLM with two CatalogSources.
func TestSimulateInstallsDependencies(t *testing.T) {
	depsDir := t.TempDir()
	if err := synthcatalog.WriteDependencies(depsDir); err != nil {
		t.Fatal(err)
	}
	syn := synthetic(t)
	const pkg = "synthetic-needs-dependency"
	start := olmv0.Start{CSV: pkg + ".v1.0.0"}

	s := newSimulator(t, syn, dirCatalog("synthetic-deps", depsDir))
	p, err := s.Simulate(context.Background(), "synthetic", start)
	if err != nil {
		t.Fatal(err)
	}
	if got := route(p); got != "1.0.0 -replaces-> 1.1.0 -replaces-> 1.2.0" || p.Result != predict.AtHead {
		t.Errorf("route %q, result %s: want the head through 1.1.0", got, p.Result)
	}
	want := []olmv0.Dependency{{CSV: "synthetic-dependency.v2.0.0", Version: "2.0.0", Package: "synthetic-dependency", Catalog: "synthetic-deps", With: pkg + ".v1.1.0"}}
	if fmt.Sprint(p.Dependencies) != fmt.Sprint(want) {
		t.Errorf("dependencies %+v, want %+v", p.Dependencies, want)
	}

	// Alone, OLM keeps 1.0.0, as nothing provides what 1.1.0 needs; an installed 1.1.0 needs it
	// itself, and the Subscription fails to resolve.
	alone := newSimulator(t, syn)
	const needs = "requires an operator with package: synthetic-dependency and with version in range: >=1.1.0"
	p, err = alone.Simulate(context.Background(), "synthetic", start)
	if err != nil {
		t.Fatal(err)
	}
	if p.Result != predict.Stranded || p.End != start.CSV || !strings.Contains(p.Stranded, "OLM cannot install "+pkg+".v1.1.0, which can replace "+start.CSV) || !strings.Contains(p.Stranded, needs) {
		t.Errorf("alone from 1.0.0: result %s at %s (%s): want it kept, saying why", p.Result, p.End, p.Stranded)
	}
	p, err = alone.Simulate(context.Background(), "synthetic", olmv0.Start{CSV: pkg + ".v1.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Result != predict.Unresolvable || p.ResolutionFailed == nil || !strings.Contains(p.ResolutionFailed.Message, needs) {
		t.Errorf("alone from 1.1.0: result %s, %+v: want OLM's ResolutionFailed naming the dependency", p.Result, p.ResolutionFailed)
	}
}

// A circle of skipRange and replaces is a finding about the start, not a failure of the run: OLM
// would go round it for good.
func TestSimulateFindsLoops(t *testing.T) {
	dir := t.TempDir()
	if err := synthcatalog.WritePackages(dir, synthcatalog.Loop); err != nil {
		t.Fatal(err)
	}
	s := newSimulator(t, dirCatalog("loop", dir))
	name := func(v string) string { return synthcatalog.BundleName(synthcatalog.Loop.Name, v) }
	for _, tc := range []struct {
		start string
		loop  []string
	}{
		{name("1.0.0"), []string{name("1.0.0"), name("1.1.0")}},
		{name("1.1.0"), []string{name("1.1.0"), name("1.0.0")}},
	} {
		p, err := s.Simulate(context.Background(), "loop", olmv0.Start{CSV: tc.start})
		if err != nil {
			t.Fatalf("from %s: %v", tc.start, err)
		}
		if p.Result != predict.Loops || !slices.Equal(p.Loop, tc.loop) {
			t.Errorf("from %s: result %s, loop %q: want loops %q", tc.start, p.Result, p.Loop, tc.loop)
		}
		if want := strings.Join(append(tc.loop, tc.loop[0]), " -> "); !strings.Contains(p.Why(), want) || !strings.Contains(olmv0.Text([]*olmv0.Path{p}), want) {
			t.Errorf("from %s: why %q and the text do not show the circle %s", tc.start, p.Why(), want)
		}
	}
}

// A failure of OLM's resolver other than an unsatisfiable solve is OLM's answer too: it sets
// ResolutionFailed (ErrorPreventedResolution) on the Subscriptions, and the start is a finding,
// not a failure to simulate. Here two installed CSVs share a name, one of them subscribed.
func TestSimulateReportsErrorPreventedResolution(t *testing.T) {
	s := newSimulator(t, synthetic(t))
	v := semver.MustParse("1.0.0")
	installed := func(pkg string, sub bool) olmv0.Existing {
		prop := property.MustBuildPackage(pkg, v.String())
		e := olmv0.Existing{From: "cluster", Operator: olmresolver.Operator{
			CSV: "twin.v1.0.0", Version: v, Properties: []*api.Property{{Type: prop.Type, Value: string(prop.Value)}},
		}}
		if sub {
			e.Subscription = &olmresolver.Subscription{Name: pkg, Package: pkg, Channel: "stable", Catalog: "synthetic"}
		}
		return e
	}
	p, err := s.Simulate(context.Background(), "synthetic", olmv0.Start{CSV: "synthetic-skiprange-overlap.v1.0.0",
		Existing: []olmv0.Existing{installed("synthetic-shared-channels", true), installed("synthetic-skipped-middle", false)}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Result != predict.Unresolvable || p.ResolutionFailed == nil || p.ResolutionFailed.Reason != olmresolver.ErrorPreventedResolution || !strings.Contains(p.ResolutionFailed.Message, "multiple name matches") {
		t.Errorf("result %s, %+v: want OLM's ErrorPreventedResolution", p.Result, p.ResolutionFailed)
	}
}
