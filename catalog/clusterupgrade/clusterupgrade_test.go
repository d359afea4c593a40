package clusterupgrade_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/clusterupgrade"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/option"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

type entry = synthcatalog.Entry

func stable(entries ...entry) map[string][]entry { return map[string][]entry{"stable": entries} }

// minors are the tree's catalogs: what each minor's index carries of each package.
type minors map[string][]synthcatalog.Package

// writeTree writes a tree of per-minor catalogs; limits sets olm.maxOpenShiftVersion and
// minKubeVersion on bundles by name.
func writeTree(t *testing.T, tree minors, max, minKube map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for minor, packages := range tree {
		cfg, err := synthcatalog.ConfigOf(packages)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cfg.Bundles {
			b := &cfg.Bundles[i]
			if v, ok := max[b.Name]; ok {
				raw, _ := json.Marshal(v)
				b.Properties = append(b.Properties, property.Property{Type: openshift.MaxVersionProperty, Value: raw})
			}
			if v, ok := fieldConstraints[b.Name]; ok {
				b.Properties = append(b.Properties, property.Property{Type: property.TypeConstraint, Value: json.RawMessage(v)})
			}
			if v, ok := minKube[b.Name]; ok {
				b.Properties = append(b.Properties, property.MustBuildCSVMetadata(operatorsv1alpha1.ClusterServiceVersion{
					Spec: operatorsv1alpha1.ClusterServiceVersionSpec{MinKubeVersion: v},
				}))
			}
		}
		if err := declcfg.WriteFS(*cfg, filepath.Join(root, minor), declcfg.WriteJSON, ".json"); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fieldMistakes is a tree with each thing that happens to an install when a cluster upgrades.
func fieldMistakes() minors {
	versioned := func(minor string, older ...string) synthcatalog.Package {
		e := entry{Version: minor + ".0", SkipRange: ">=4.0.0 <" + minor + ".0"}
		return synthcatalog.Package{Name: "versioned", DefaultChannel: "stable", Channels: map[string][]entry{"stable": {e}, minor: {e}}}
	}
	return minors{
		"v4.10": {
			{Name: "mover", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"}, entry{Version: "1.1.0", Replaces: "1.0.0"})},
			{Name: "puller", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"}, entry{Version: "1.1.0", Replaces: "1.0.0"})},
			{Name: "capped", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "badmax", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "gone", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "kube", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "needs", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "broken", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0", Requires: "absent >=1.0.0"})},
			{Name: "constrained", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			versioned("4.10"),
		},
		"v4.11": {
			{Name: "mover", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"}, entry{Version: "1.1.0", Replaces: "1.0.0"}, entry{Version: "1.2.0", Replaces: "1.1.0"})},
			{Name: "puller", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "capped", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "badmax", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "kube", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "needs", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"}, entry{Version: "1.1.0", Replaces: "1.0.0", Requires: "absent >=1.0.0"})},
			{Name: "broken", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0", Requires: "absent >=1.0.0"})},
			{Name: "constrained", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			versioned("4.11"),
		},
		// No 4.12: the upgrades of 4.11 and 4.13 are not followed.
		"v4.13": {
			{Name: "mover", DefaultChannel: "stable", Channels: stable(entry{Version: "1.2.0"})},
		},
	}
}

var (
	fieldMax     = map[string]string{"capped.v1.0.0": "4.10", "badmax.v1.0.0": "4.10.1", "versioned.v4.10.0": "4.11", "versioned.v4.11.0": "4.12"}
	fieldMinKube = map[string]string{"kube.v1.0.0": "1.30.0"}
	// fieldConstraints are olm.constraint properties, which the verb leaves to OLM's resolver
	// alone: it assumes no provider for them.
	fieldConstraints = map[string]string{"constrained.v1.0.0": `{"failureMessage":"constrained needs absent","package":{"packageName":"absent","versionRange":">=1.0.0"}}`}
)

func TestEveryOutcomeOfAClusterUpgrade(t *testing.T) {
	root := writeTree(t, fieldMistakes(), fieldMax, fieldMinKube)
	r, err := clusterupgrade.Check(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 1 || r.Steps[0].From != "v4.10" || r.Steps[0].To != "v4.11" || strings.Join(r.Unchecked, " ") != "v4.11 v4.13" {
		t.Fatalf("steps %+v, unchecked %v: want v4.10 -> v4.11 only", r.Steps, r.Unchecked)
	}
	// kube.v1.0.0 needs Kubernetes 1.30; OpenShift 4.10 runs 1.23.
	if r.Steps[0].NotInstallable != 1 {
		t.Errorf("%d bundles not installable, want kube's", r.Steps[0].NotInstallable)
	}
	got := map[string]clusterupgrade.Finding{}
	for _, f := range r.Steps[0].Findings {
		got[f.Channel+"/"+f.Bundle] = f
	}
	for _, tc := range []struct {
		start   string
		outcome clusterupgrade.Outcome
		end     string
		message string
	}{
		{"stable/mover.v1.0.0", clusterupgrade.Moves, "mover.v1.2.0", ""},
		{"stable/mover.v1.1.0", clusterupgrade.Moves, "mover.v1.2.0", ""},
		{"stable/puller.v1.0.0", clusterupgrade.Stays, "puller.v1.0.0", ""},
		{"stable/puller.v1.1.0", clusterupgrade.Stranded, "puller.v1.1.0", "puller.v1.1.0"},
		{"stable/gone.v1.0.0", clusterupgrade.Stranded, "", "package gone is not in the v4.11 catalog"},
		{"stable/capped.v1.0.0", clusterupgrade.Blocks, "", "OLM reports the cluster not upgradeable to 4.11 (IncompatibleOperatorsInstalled): maximum supported OCP version for <namespace>/capped.v1.0.0 is 4.10"},
		{"stable/badmax.v1.0.0", clusterupgrade.Blocks, "", "has invalid olm.maxOpenShiftVersion properties: olm.maxOpenShiftVersion must name only <major>.<minor>, not 4.10.1"},
		{"stable/versioned.v4.10.0", clusterupgrade.Moves, "versioned.v4.11.0", ""},
		{"4.10/versioned.v4.10.0", clusterupgrade.Stranded, "", "channel 4.10 is not in the v4.11 catalog (channels: 4.11, stable)"},
		// The upgrade needs what no catalog provides: OLM keeps the installed bundle.
		{"stable/needs.v1.0.0", clusterupgrade.Stranded, "needs.v1.0.0", "OLM cannot install needs.v1.1.0, which can replace needs.v1.0.0: constraints not satisfiable"},
		// The installed bundle needs it itself: it runs, so another catalog provides it.
		{"stable/broken.v1.0.0", clusterupgrade.Stays, "broken.v1.0.0", ""},
		// An olm.constraint is OLM's alone to meet: its resolution fails.
		{"stable/constrained.v1.0.0", clusterupgrade.Unresolvable, "constrained.v1.0.0", "bundle constrained.v1.0.0 requires an operator with package: absent"},
	} {
		f, ok := got[tc.start]
		if !ok {
			t.Errorf("%s: not followed", tc.start)
			continue
		}
		if f.Outcome != tc.outcome || f.End != tc.end || !strings.Contains(f.Message, tc.message) {
			t.Errorf("%s: %s to %q (%s), want %s to %q saying %q", tc.start, f.Outcome, f.End, f.Message, tc.outcome, tc.end, tc.message)
		}
		delete(got, tc.start)
	}
	for start, f := range got {
		t.Errorf("%s: unexpected finding %+v", start, f)
	}
}

// A bundle that only a later z-stream of the minor can install is followed: clusters at that
// z-stream run it. One that needs a later Kubernetes minor is not. A circle of upgrades in the
// next minor is a finding about the installs it catches, and the run goes on.
func TestZStreamsAndLoops(t *testing.T) {
	loop := synthcatalog.Loop
	loop.Name = "loop"
	tree := minors{
		"v4.20": {
			{Name: "zstream", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "later", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			{Name: "loop", DefaultChannel: "stable", Channels: stable(entry{Version: "1.1.0"})},
		},
		"v4.21": {
			{Name: "zstream", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
			loop,
		},
	}
	root := writeTree(t, tree, nil, map[string]string{"zstream.v1.0.0": "1.33.6", "later.v1.0.0": "1.34.0"})
	r, err := clusterupgrade.Check(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 1 || r.Steps[0].NotInstallable != 1 {
		t.Fatalf("steps %+v: want v4.20 -> v4.21 with later's bundle not followed", r.Steps)
	}
	got := map[string]clusterupgrade.Finding{}
	for _, f := range r.Steps[0].Findings {
		got[f.Bundle] = f
	}
	if f := got["zstream.v1.0.0"]; f.Outcome != clusterupgrade.Stays {
		t.Errorf("zstream: %+v, want it followed, and kept at the head", f)
	}
	if f := got["loop.v1.1.0"]; f.Outcome != clusterupgrade.Loops || !strings.Contains(f.Message, "loop.v1.1.0 -> loop.v1.0.0 -> loop.v1.1.0") {
		t.Errorf("loop: %+v, want the circle", f)
	}
}

// What a running install requires came from its minor's catalog, subscribed there: when the
// cluster upgrades, OLM upgrades that dependency too, as the next release needs.
func TestRunningInstallsKeepTheirDependencies(t *testing.T) {
	tree := minors{
		"v4.20": {
			{Name: "app", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0", Requires: "dep >=1.0.0"})},
			{Name: "dep", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"})},
		},
		"v4.21": {
			{Name: "app", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0", Requires: "dep >=1.0.0"},
				entry{Version: "1.1.0", Replaces: "1.0.0", Requires: "dep >=2.0.0"})},
			{Name: "dep", DefaultChannel: "stable", Channels: stable(entry{Version: "1.0.0"}, entry{Version: "2.0.0", Replaces: "1.0.0"})},
		},
	}
	r, err := clusterupgrade.Check(context.Background(), writeTree(t, tree, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Steps[0].Findings {
		if f.Bundle == "app.v1.0.0" && (f.Outcome != clusterupgrade.Moves || f.End != "app.v1.1.0") {
			t.Errorf("app: %+v, want it moved on, its dependency upgraded beside it", f)
		}
	}
}

// Without --since every install a cluster upgrade leaves stuck fails the verb; with it, only
// those the earlier tree did not leave stuck, the others counted apart.
func TestSinceFailsOnlyOnWhatIsNewlyStuck(t *testing.T) {
	earlier := writeTree(t, fieldMistakes(), fieldMax, fieldMinKube)
	changed := fieldMistakes()
	changed["v4.11"] = changed["v4.11"][1:] // mover is gone from 4.11's index
	now := writeTree(t, changed, fieldMax, fieldMinKube)

	var out bytes.Buffer
	err := (&clusterupgrade.ClusterUpgrade{Tree: earlier, Output: "text", Out: &out}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "12 install(s) followed, 7 stuck by a cluster upgrade (2 blocks, 4 stranded, 1 unresolvable)") {
		t.Errorf("the earlier tree alone: %v", err)
	}
	for _, want := range []string{
		"v4.10 -> v4.11: 12 installs followed: 3 move on, 2 stay, 4 stranded, 1 unresolvable, 2 block the upgrade (1 bundles no release of v4.10 can run, not followed)",
		"  package mover, channel stable: mover.v1.0.0, mover.v1.1.0 -> mover.v1.2.0\n",
		"  package puller, channel stable: puller.v1.0.0 stays at the channel head\n",
		"  ! package versioned, channel 4.10: versioned.v4.10.0 stranded: channel 4.10 is not in the v4.11 catalog",
		"v4.13 -> the next minor: the tree has no catalog for it, not followed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	err = (&clusterupgrade.ClusterUpgrade{Tree: now, Since: earlier, Output: "text", Out: &out}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "2 install(s) newly stuck since "+earlier+" (2 stranded)") {
		t.Errorf("with the mover gone: %v", err)
	}
	if !strings.Contains(out.String(), "since "+earlier+": 2 install(s) newly stuck, 7 stuck already") {
		t.Errorf("the count apart is missing:\n%s", out.String())
	}
	if err := (&clusterupgrade.ClusterUpgrade{Tree: earlier, Since: earlier, Output: "json", Out: &out}).Run(context.Background()); err != nil {
		t.Errorf("a tree since itself: %v", err)
	}
}

func TestRefusesWhatIsNoTree(t *testing.T) {
	plain := t.TempDir()
	if err := os.WriteFile(filepath.Join(plain, "catalog.json"), []byte(`{"schema":"olm.package","name":"p"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := writeTree(t, fieldMistakes(), nil, nil)
	for _, tc := range []struct {
		a     clusterupgrade.ClusterUpgrade
		field string
		want  string
	}{
		{clusterupgrade.ClusterUpgrade{Tree: plain, Output: "text"}, "", "holds no per-minor catalog"},
		{clusterupgrade.ClusterUpgrade{Tree: tree, Output: "yaml"}, "Output", `unknown output "yaml"`},
		{clusterupgrade.ClusterUpgrade{Tree: tree, Since: plain, Output: "text"}, "Since", "holds no per-minor catalog"},
	} {
		tc.a.Out = &bytes.Buffer{}
		err := tc.a.Run(context.Background())
		var oe *option.Error
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.field != "") != (errors.As(err, &oe) && oe.Field == tc.field) {
			t.Errorf("%+v: %v, want an error about %q saying %q", tc.a, err, tc.field, tc.want)
		}
	}
}

// On the field tree's first two minors, each kind of package the tree builds meets the fate
// the field gives it: one missing from the next minor's index strands its installs, one capped
// at its minor blocks the cluster, one capped at the next minor does not, and one versioned with
// OpenShift moves its channel stable to the next minor's release while its minor's channel is
// gone.
func TestFieldTreeOutcomes(t *testing.T) {
	root := t.TempDir()
	if err := synthcatalog.WriteFieldTree(root, 2); err != nil {
		t.Fatal(err)
	}
	r, err := clusterupgrade.Check(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 1 {
		t.Fatalf("%d cluster upgrades followed, want 1:\n%s", len(r.Steps), clusterupgrade.Text(r))
	}
	minors := synthcatalog.FieldTreeMinors()
	for k, step := range r.Steps {
		to := minors[k+1]
		byPackage := map[string][]clusterupgrade.Finding{}
		for _, f := range step.Findings {
			byPackage[f.Package] = append(byPackage[f.Package], f)
		}
		checked := 0
		for i := range synthcatalog.FieldPackages {
			pkg := synthcatalog.FieldPackage(i)
			findings := byPackage[pkg]
			if len(findings) == 0 {
				continue // not in the older minor's index
			}
			var want func(clusterupgrade.Finding) bool
			var what string
			switch {
			case (i+k+1)%10 == synthcatalog.FieldTreeAbsent:
				what = "stranded: the package is not in " + to.Index()
				want = func(f clusterupgrade.Finding) bool {
					return f.Outcome == clusterupgrade.Stranded && strings.Contains(f.Message, "is not in the "+to.Index()+" catalog")
				}
			case slices.Contains(synthcatalog.FieldTreeVersioned, i):
				what = "stable moves to " + to.String() + ".0, the minor's channel is gone"
				want = func(f clusterupgrade.Finding) bool {
					if f.Channel == "stable" {
						return f.Outcome == clusterupgrade.Moves && strings.HasSuffix(f.End, "v"+to.String()+".0")
					}
					return f.Outcome == clusterupgrade.Stranded && strings.Contains(f.Message, "channel "+f.Channel+" is not in the "+to.Index()+" catalog")
				}
			case i%10 == synthcatalog.FieldTreeCappedAtMinor:
				what = "blocks the upgrade to " + to.String()
				want = func(f clusterupgrade.Finding) bool {
					return f.Outcome == clusterupgrade.Blocks && strings.Contains(f.Message, "maximum supported OCP version")
				}
			case i%10 == synthcatalog.FieldTreeCappedAtNext:
				what = "does not block"
				want = func(f clusterupgrade.Finding) bool { return f.Outcome != clusterupgrade.Blocks }
			default:
				continue
			}
			checked++
			for _, f := range findings {
				if !want(f) {
					t.Errorf("%s -> %s: %s in channel %s: %s (%s), want: %s", step.From, step.To, f.Bundle, f.Channel, f.Outcome, f.Message, what)
				}
			}
		}
		if checked < 8 {
			t.Errorf("%s -> %s: only %d packages of a known fate followed", step.From, step.To, checked)
		}
	}
}
