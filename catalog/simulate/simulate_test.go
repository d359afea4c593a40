package simulate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/internal/option"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

func TestPictureMarksThePath(t *testing.T) {
	var out bytes.Buffer
	a := &simulate.Simulate{Catalog: "../certified/v4.11", InstalledFrom: "../community/v4.11", Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"}, Output: "dot", Out: &out}
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"foreign/aws-efs-operator.v0.0.6" [label="community 0.0.6\ninstalled", style="rounded,dashed", color="#1f6feb"`,
		`"stable/aws-efs-csi-driver-operator.v4.11.0" [label="4.11.0\nhead\nstep 1", style="rounded,bold", color="#1f6feb"`,
		`"foreign/aws-efs-operator.v0.0.6" -> "stable/aws-efs-csi-driver-operator.v4.11.0" [label="skipRange step 1", style=dotted, color="#1f6feb"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("picture lacks %s:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "#1f6feb") != 6 {
		t.Errorf("want the installed CSV, one step and its edge marked, nothing else:\n%s", out.String())
	}
}

func TestSimulateVerbRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		a    simulate.Simulate
		want string
	}{
		{simulate.Simulate{Catalog: "../certified/v4.11", Output: "text"}, simulate.ErrOneStart.Error()},
		{simulate.Simulate{Catalog: "../certified/v4.11", All: true, Start: olmv0.Start{CSV: "x"}, Output: "text"}, simulate.ErrOneStart.Error()},
		{simulate.Simulate{Catalog: "../certified/v4.11", All: true, Output: "html"}, `unknown output "html": use text, yaml, json, dot, mermaid, svg, png`},
		{simulate.Simulate{Catalog: "../certified/v4.11", All: true, Output: "dot"}, "a picture shows one path and there are 4: start from one installed CSV"},
	} {
		var out bytes.Buffer
		tc.a.Out = &out
		if err := tc.a.Run(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.a, err, tc.want)
		}
	}
}

// On the field catalog, releases take on dependencies half-way. Every start of --all is an
// install that runs, so what it needs is installed beside it: from the catalogs given when they
// carry it, else from another catalog. What a later release newly needs and no catalog given
// carries keeps the install where it is, with OLM's reason; nothing is unresolvable.
func TestFieldSimulateAllReportsEveryStart(t *testing.T) {
	field, deps := fieldCatalogs(t)
	s, err := olmv0.New(context.Background(), predict.Catalog{Name: synthcatalog.FieldCatalog, Dir: field, FS: os.DirFS(field)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	starts := len(s.Starts(synthcatalog.FieldCatalog))
	var needsOtherCatalog []string
	for i := range synthcatalog.FieldPackages {
		if i%8 == synthcatalog.FieldNeedsIssuer || i%8 == synthcatalog.FieldNeedsCertManager || i == synthcatalog.FieldNeedsNothingProvides {
			needsOtherCatalog = append(needsOtherCatalog, synthcatalog.FieldPackage(i))
		}
	}
	nothing := synthcatalog.FieldPackage(synthcatalog.FieldNeedsNothingProvides)
	for _, tc := range []struct {
		name string
		env  predict.Environment
		// kept are the packages some of whose starts OLM keeps for want of a dependency.
		kept []string
		// provided are where the providers of the starts that need one come from.
		provided []string
	}{
		// A package that needs a sibling's API upgrades alone: the field catalog has the sibling.
		{"alone", predict.Environment{}, needsOtherCatalog, []string{olmv0.AnotherCatalog, synthcatalog.FieldCatalog}},
		{"with the deps catalog", predict.Environment{Catalogs: []string{deps + ",priority=10"}}, []string{nothing},
			[]string{olmv0.AnotherCatalog, synthcatalog.FieldCatalog, synthcatalog.FieldDepsCatalog}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			a := &simulate.Simulate{Catalog: field, All: true, Environment: tc.env, Output: "json", Out: &out}
			if err := a.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var got struct{ Paths []olmv0.Path }
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Paths) != starts {
				t.Errorf("%d paths printed, want every start's: %d", len(got.Paths), starts)
			}
			kept, provided := map[string]bool{}, map[string]bool{}
			for _, p := range got.Paths {
				switch {
				case p.Result == predict.Stranded && strings.Contains(p.Stranded, "constraints not satisfiable: "):
					kept[p.Package] = true
				case p.Result != predict.AtHead && p.Result != predict.Stranded:
					t.Errorf("%s: result %q (%s)", p.Start.Name, p.Result, p.Why())
				}
				for _, pr := range p.Providers {
					provided[pr.Catalog] = true
					if pr.Catalog == olmv0.AnotherCatalog && tc.name != "alone" && p.Package != nothing {
						t.Errorf("%s: %s, which the deps catalog carries", p.Start.Name, pr)
					}
				}
			}
			if fmt.Sprint(slices.Sorted(maps.Keys(kept))) != fmt.Sprint(tc.kept) {
				t.Errorf("packages kept for want of a dependency %v, want %v", slices.Sorted(maps.Keys(kept)), tc.kept)
			}
			if want := slices.Sorted(slices.Values(tc.provided)); fmt.Sprint(slices.Sorted(maps.Keys(provided))) != fmt.Sprint(want) {
				t.Errorf("providers from %v, want %v", slices.Sorted(maps.Keys(provided)), want)
			}
		})
	}
}

// At a minor, every start leaves out the bundles no release of the minor can run: no cluster at
// it has them installed. 4.11's release needs Kubernetes 1.24; OpenShift 4.10 ships 1.23.
func TestSimulateAllLeavesOutWhatTheMinorCannotRun(t *testing.T) {
	const bundle = "aws-efs-csi-driver-operator.v4.11.0"
	for _, olm := range []string{"v0", "v1"} {
		var out bytes.Buffer
		a := &simulate.Simulate{Catalog: "../certified/v4.11", Minor: "4.10", All: true, OLM: olm, Output: "json", Out: &out}
		if err := a.Run(context.Background()); err != nil {
			t.Fatalf("%s: %v", olm, err)
		}
		var got struct {
			Paths       []json.RawMessage `json:"paths"`
			NotRunnable []string          `json:"notRunnable"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		// OLM v1 has one start besides the installed bundles: a new ClusterExtension.
		if fresh := map[string]int{"v0": 0, "v1": 1}[olm]; len(got.Paths) != fresh || !slices.Equal(got.NotRunnable, []string{bundle}) {
			t.Errorf("%s: %d paths, not runnable %q: want %d, and %s named", olm, len(got.Paths), got.NotRunnable, fresh, bundle)
		}
		out.Reset()
		a = &simulate.Simulate{Catalog: "../certified/v4.11", Minor: "4.11", All: true, OLM: olm, Output: "text", Out: &out}
		if err := a.Run(context.Background()); err != nil || strings.Contains(out.String(), "Not simulated") || !strings.Contains(out.String(), bundle) {
			t.Errorf("%s at 4.11: %v\n%s", olm, err, out.String())
		}
	}
	var out bytes.Buffer
	a := &simulate.Simulate{Catalog: "../certified/v4.11", Minor: "4.10", All: true, Output: "text", Out: &out}
	if err := a.Run(context.Background()); err != nil || !strings.Contains(out.String(), "Not simulated, as no release of 4.10 can run them (catalog validate says why): "+bundle+"\n") {
		t.Errorf("text: %v\n%s", err, out.String())
	}
}

// A tree of per-minor catalogs is read at the minor asked for, the installed-from tree too.
func TestSimulateReadsATreeAtItsMinor(t *testing.T) {
	var out bytes.Buffer
	a := &simulate.Simulate{Catalog: "../certified", InstalledFrom: "../community", Minor: "v4.10", All: true, Output: "text", Out: &out}
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"certified-v4.10: package aws-efs-operator, channel stable (head aws-efs-csi-driver-operator.v4.10.0)",
		"installed  aws-efs-operator.v0.0.8 (0.0.8, from community-v4.10)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, tc := range []struct {
		a     simulate.Simulate
		field string
		want  string
	}{
		{simulate.Simulate{Catalog: "../certified", Minor: "4.12", All: true}, "", "catalog tree ../certified has no catalog for OpenShift 4.12 (minors: v4.5, v4.9, v4.10, v4.11)"},
		{simulate.Simulate{Catalog: "../certified", Minor: "4.x", All: true}, "Minor", `"4.x" is not an OpenShift minor`},
		{simulate.Simulate{Catalog: "../certified", All: true}, "", "is a tree of per-minor catalogs (v4.5, v4.9, v4.10, v4.11): give the catalog of one minor"},
	} {
		tc.a.Output, tc.a.Out = "text", &bytes.Buffer{}
		err := tc.a.Run(context.Background())
		var oe *option.Error
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.field != "") != (errors.As(err, &oe) && oe.Field == tc.field) {
			t.Errorf("%+v: %v, want an error about %q saying %q", tc.a, err, tc.field, tc.want)
		}
	}
}
