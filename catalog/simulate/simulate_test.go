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

// On the field catalog, some starts need a dependency: --all prints every start's outcome, the
// unresolvable ones with OLM's ResolutionFailed, and only then fails. Given the catalog that
// provides the dependencies, only the starts whose dependency nothing provides stay unresolvable.
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
	for _, tc := range []struct {
		name string
		env  predict.Environment
		// unresolvable are the packages some of whose starts OLM cannot resolve.
		unresolvable []string
	}{
		// A package that needs a sibling's API resolves alone: OLM installs an older release of
		// the sibling, one that needs no other catalog yet.
		{"alone", predict.Environment{}, needsOtherCatalog},
		{"with the deps catalog", predict.Environment{Catalogs: []string{deps + ",priority=10"}}, []string{
			synthcatalog.FieldPackage(synthcatalog.FieldNeedsNothingProvides),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			a := &simulate.Simulate{Catalog: field, All: true, Environment: tc.env, Output: "json", Out: &out}
			err := a.Run(context.Background())
			var ue *simulate.UnresolvableError
			if !errors.As(err, &ue) || ue.Starts != starts {
				t.Fatalf("error %v: want an UnresolvableError over all %d starts", err, starts)
			}
			var got struct{ Paths []olmv0.Path }
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Paths) != starts {
				t.Errorf("%d paths printed, want every start's: %d", len(got.Paths), starts)
			}
			unresolvable := map[string]bool{}
			count := 0
			for _, p := range got.Paths {
				switch {
				case p.Result == predict.Unresolvable:
					count++
					unresolvable[p.Package] = true
					if p.ResolutionFailed == nil || p.ResolutionFailed.Reason != "ConstraintsNotSatisfiable" || !strings.HasPrefix(p.ResolutionFailed.Message, "constraints not satisfiable: ") {
						t.Errorf("%s: unresolvable with %+v: want OLM's ResolutionFailed", p.Start.Name, p.ResolutionFailed)
					}
				case p.Result != predict.AtHead && p.Result != predict.Stranded:
					t.Errorf("%s: result %q", p.Start.Name, p.Result)
				}
			}
			if count != ue.Unresolvable {
				t.Errorf("%d unresolvable paths printed, the error says %d", count, ue.Unresolvable)
			}
			if fmt.Sprint(slices.Sorted(maps.Keys(unresolvable))) != fmt.Sprint(tc.unresolvable) {
				t.Errorf("unresolvable packages %v, want %v", slices.Sorted(maps.Keys(unresolvable)), tc.unresolvable)
			}
		})
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
