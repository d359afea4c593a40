package simulate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv1"
	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/internal/option"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

// runV1 runs the verb with --olm v1 and JSON output, and reads the paths back.
func runV1(t *testing.T, a simulate.Simulate) ([]olmv1.Path, error) {
	t.Helper()
	var out bytes.Buffer
	a.OLM, a.Output, a.Out = "v1", "json", &out
	err := a.Run(context.Background())
	var got struct{ Paths []olmv1.Path }
	if out.Len() > 0 {
		if jerr := json.Unmarshal(out.Bytes(), &got); jerr != nil {
			t.Fatalf("output %q: %v", out.String(), jerr)
		}
	}
	return got.Paths, err
}

// routes are the paths as "package start -edge-> bundle ...: result", versions for bundles.
func routes(paths []olmv1.Path) []string {
	short := func(n string) string { return n[strings.LastIndex(n, ".v")+2:] }
	var out []string
	for _, p := range paths {
		r := p.Package + " -"
		if p.Start != nil {
			r = p.Package + " " + short(p.Start.Name)
		}
		for _, s := range p.Steps {
			r += " -" + s.Edge + "-> " + short(s.To)
		}
		out = append(out, r+": "+string(p.Result))
	}
	return out
}

func checkRoutes(t *testing.T, paths []olmv1.Path, want []string) {
	t.Helper()
	got := routes(paths)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("routes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The committed catalogs under operator-controller's rule: each minor's catalog, and a cluster
// upgraded to the next minor whose ClusterCatalog now serves that minor's catalog.
func TestSimulateV1CommittedCatalogs(t *testing.T) {
	const ebs, efs, manila = "aws-ebs-csi-driver-operator", "aws-efs-operator", "manila-csi-driver-operator"
	t.Run("certified", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../certified/v4.11", All: true})
		if err != nil {
			t.Fatal(err)
		}
		checkRoutes(t, paths, []string{
			efs + " - -install-> 4.11.0: head",
			efs + " 4.11.0: head",
		})
	})
	t.Run("certified 4.5", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../certified/v4.5", All: true})
		if err != nil {
			t.Fatal(err)
		}
		checkRoutes(t, paths, []string{
			ebs + " - -install-> 4.5.0: head",
			ebs + " 4.5.0: head",
			manila + " - -install-> 4.5.0: head",
			manila + " 4.5.0: head",
		})
	})
	t.Run("cluster upgraded from 4.10", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../certified/v4.11", InstalledFrom: "../certified/v4.10", All: true})
		if err != nil {
			t.Fatal(err)
		}
		checkRoutes(t, paths, []string{efs + " 4.10.0 -skipRange-> 4.11.0: head"})
		if st := paths[0].Steps[0]; st.SkipRange != ">=0.0.6 <4.11.0" {
			t.Errorf("4.10.0's step %+v: want the skipRange of 4.11.0", st)
		}
	})
	t.Run("community", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../community/v4.11", All: true})
		if err != nil {
			t.Fatal(err)
		}
		checkRoutes(t, paths, []string{
			efs + " - -install-> 0.0.8: head",
			efs + " 0.0.6 -replaces-> 0.0.7 -replaces-> 0.0.8: head",
			efs + " 0.0.7 -replaces-> 0.0.8: head",
			efs + " 0.0.8: head",
		})
		if d := paths[1].Steps[0].Deprecations; len(d) != 1 || !strings.HasPrefix(d[0], "The community aws-efs-operator is deprecated.") {
			t.Errorf("deprecations %q: want the package's", d)
		}
	})
	// The community -> certified move: the community ClusterCatalog replaced by the certified
	// one, every community version goes straight to the certified head.
	t.Run("community to certified", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../certified/v4.11", InstalledFrom: "../community/v4.11", All: true})
		if err != nil {
			t.Fatal(err)
		}
		checkRoutes(t, paths, []string{
			efs + " 0.0.6 -skipRange-> 4.11.0: head",
			efs + " 0.0.7 -skipRange-> 4.11.0: head",
			efs + " 0.0.8 -skipRange-> 4.11.0: head",
		})
		if p := paths[0]; p.Start.Catalog != "community-v4.11" || p.Steps[0].Catalog != "certified-v4.11" {
			t.Errorf("path %+v: want the start from community, the step from certified", p)
		}
	})
	// Both kept as ClusterCatalogs of one priority: operator-controller cannot choose.
	t.Run("community and certified side by side", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../certified/v4.11", InstalledFrom: "../community/v4.11", Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"},
			Environment: predict.Environment{Catalogs: []string{"../community/v4.11"}}})
		var ue *simulate.UnresolvableError
		if !errors.As(err, &ue) || ue.Unresolvable != 1 || !strings.Contains(err.Error(), "operator-controller cannot resolve 1 of 1") {
			t.Fatalf("error %v: want the start unresolvable", err)
		}
		const want = `error upgrading from currently installed version "0.0.6": found bundles for package "aws-efs-operator" in multiple catalogs with the same priority [certified-v4.11 community-v4.11]`
		if p := paths[0]; p.Result != predict.Unresolvable || p.Progressing != want || p.End != "aws-efs-operator.v0.0.6" {
			t.Errorf("path %+v: want %q, 0.0.6 kept", p, want)
		}
	})
	// Community kept above certified: the community chain to its own head.
	t.Run("community kept at a higher priority", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../certified/v4.11", InstalledFrom: "../community/v4.11", Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"},
			Environment: predict.Environment{Catalogs: []string{"../community/v4.11,priority=10"}}})
		if err != nil {
			t.Fatal(err)
		}
		checkRoutes(t, paths, []string{efs + " 0.0.6 -replaces-> 0.0.7 -replaces-> 0.0.8: head"})
	})
	t.Run("community kept at a lower priority", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../certified/v4.11", InstalledFrom: "../community/v4.11", Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"},
			Environment: predict.Environment{Catalogs: []string{"../community/v4.11,priority=-1"}}})
		if err != nil {
			t.Fatal(err)
		}
		checkRoutes(t, paths, []string{efs + " 0.0.6 -skipRange-> 4.11.0: head"})
	})
	t.Run("a version range short of the minor's release", func(t *testing.T) {
		paths, err := runV1(t, simulate.Simulate{Catalog: "../certified/v4.11", InstalledFrom: "../community/v4.11", Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"}, Version: "<4.11.0"})
		var ue *simulate.UnresolvableError
		if !errors.As(err, &ue) || len(paths) != 1 || paths[0].Result != predict.Unresolvable || paths[0].End != "aws-efs-operator.v0.0.6" {
			t.Fatalf("error %v, paths %+v: want 0.0.6 kept, unresolvable", err, paths)
		}
	})
}

func TestSimulateV1Text(t *testing.T) {
	var out bytes.Buffer
	a := &simulate.Simulate{OLM: "v1", Catalog: "../certified/v4.11", InstalledFrom: "../community/v4.11", Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"}, Output: "text", Out: &out}
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	const want = `certified-v4.11: package aws-efs-operator, any channel (latest aws-efs-csi-driver-operator.v4.11.0)
  installed  aws-efs-operator.v0.0.6 (0.0.6, from community-v4.11)
  1. aws-efs-csi-driver-operator.v4.11.0 (4.11.0) by skipRange >=0.0.6 <4.11.0 in channel 4.10
  operator-controller settles on aws-efs-csi-driver-operator.v4.11.0, the latest.
`
	if out.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestSimulateV1PictureMarksThePath(t *testing.T) {
	var out bytes.Buffer
	a := &simulate.Simulate{OLM: "v1", Catalog: "../certified/v4.11", InstalledFrom: "../community/v4.11", Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"}, Output: "dot", Out: &out}
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"foreign/aws-efs-operator.v0.0.6" [label="community 0.0.6\ninstalled", style="rounded,dashed", color="#1f6feb"`,
		// operator-controller, asked for no channel, reports the first that has the step.
		`"4.10/aws-efs-csi-driver-operator.v4.11.0" [label="4.11.0\nhead\nstep 1", style="rounded,bold", color="#1f6feb"`,
		`"foreign/aws-efs-operator.v0.0.6" -> "4.10/aws-efs-csi-driver-operator.v4.11.0" [label="skipRange step 1", style=dotted, color="#1f6feb"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("picture lacks %s:\n%s", want, out.String())
		}
	}
}

// Each refusal names the option, by the action struct's field that the command maps to its flag.
func TestSimulateV1RefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		a     simulate.Simulate
		field string
		want  string
	}{
		{simulate.Simulate{OLM: "v2", All: true}, "OLM", `unknown OLM "v2": use v0 (Subscriptions, resolved by OLM's catalog operator) or v1 (ClusterExtensions, resolved by operator-controller)`},
		{simulate.Simulate{OLM: "v1", All: true, Environment: predict.Environment{Packages: []string{"cert-manager@1.14.4"}}}, "Environment.Packages", "operator-controller resolves no dependencies"},
		{simulate.Simulate{OLM: "v1", All: true, Environment: predict.Environment{APIs: []string{"cert-manager.io/v1/Issuer"}}}, "Environment.APIs", "operator-controller resolves no dependencies"},
		{simulate.Simulate{OLM: "v1", All: true, Version: ">=4.10 <<5"}, "Version", `the API server refuses the ClusterExtension: spec.source.catalog.version: Invalid value: ">=4.10 <<5": invalid version expression`},
		{simulate.Simulate{OLM: "v1", All: true, Version: "4.10.0-01"}, "Version", `operator-controller refuses it: desired version range "4.10.0-01" is invalid: constraint parser error`},
		{simulate.Simulate{OLM: "v1", All: true, Channels: []string{"Stable"}}, "Channels", `spec.source.catalog.channels[0]: Invalid value: "Stable": channels entries must be valid DNS1123 subdomains`},
		{simulate.Simulate{OLM: "v1", All: true, Policy: "Always"}, "Policy", `Unsupported value: supported values: "CatalogProvided", "SelfCertified"`},
		{simulate.Simulate{Version: ">=4.10.0", All: true}, "Version", "a version range is a ClusterExtension's (--olm v1)"},
		{simulate.Simulate{Policy: "SelfCertified", All: true}, "Policy", "an upgrade constraint policy is a ClusterExtension's (--olm v1)"},
		{simulate.Simulate{Channels: []string{"stable", "preview"}, Start: olmv0.Start{CSV: "x"}}, "Channels", "a Subscription names one channel, and 2 were given (stable, preview)"},
	} {
		var out bytes.Buffer
		a := tc.a
		a.Catalog, a.Out = "../certified/v4.11", &out
		if a.Output == "" {
			a.Output = "text"
		}
		err := a.Run(context.Background())
		var oe *option.Error
		if !errors.As(err, &oe) || oe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one about %s saying %q", tc.a, err, tc.field, tc.want)
		}
	}
}

func TestSimulateV1RefusesBadStarts(t *testing.T) {
	for _, tc := range []struct {
		a    simulate.Simulate
		want string
	}{
		{simulate.Simulate{Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"}}, `CSV "aws-efs-operator.v0.0.6" is not in catalog ../certified/v4.11`},
		{simulate.Simulate{Start: olmv0.Start{CSV: "aws-efs-csi-driver-operator.v4.11.0"}, Channels: []string{"fast"}},
			`package "aws-efs-operator" of catalog ../certified/v4.11 has no channel "fast" (channels: 4.10, 4.11, 4.9, stable)`},
		{simulate.Simulate{Start: olmv0.Start{CSV: "aws-efs-operator.v0.0.6"}, InstalledFrom: "../community/v4.11", Catalog: "../certified/v4.11"}, ""},
		{simulate.Simulate{}, simulate.ErrOneStart.Error()},
		{simulate.Simulate{All: true, Output: "dot"}, "a picture shows one path and there are 2: start from one installed bundle"},
	} {
		var out bytes.Buffer
		a := tc.a
		a.OLM, a.Catalog, a.Out = "v1", "../certified/v4.11", &out
		if a.Output == "" {
			a.Output = "text"
		}
		err := a.Run(context.Background())
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.a, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.a, err, tc.want)
		}
	}
}

// The catalogs of the bad-input corpus through `simulate --olm v1 --all`: no panic, no byte of
// the input changed, and a refusal names the input. What loads is resolved; what operator-
// controller cannot resolve is a verdict.
func TestSimulateV1BadInputCatalogs(t *testing.T) {
	root := filepath.Join("..", "..", "test", "badinput", "catalog")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		input := filepath.Join(root, e.Name(), "input")
		if _, err := os.Stat(input); err != nil {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			before := treeDigest(t, input)
			var out bytes.Buffer
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panicked: %v\n%s", r, debug.Stack())
					}
				}()
				return (&simulate.Simulate{OLM: "v1", Catalog: input, All: true, Output: "text", Out: &out}).Run(context.Background())
			}()
			var ue *simulate.UnresolvableError
			if err != nil && !errors.As(err, &ue) && !strings.Contains(err.Error(), input) {
				t.Errorf("refused without naming the input %s: %v", input, err)
			}
			if treeDigest(t, input) != before {
				t.Errorf("the verb changed its input")
			}
		})
	}
}

// treeDigest is every path of a tree with its content or link target.
func treeDigest(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + "\n")
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			b.WriteString("-> " + target + "\n")
		case d.Type().IsRegular():
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(raw)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// On the field catalog, operator-controller refuses every bundle that declares a dependency, so
// every start of a package that takes one on half-way is unresolvable (its walk reaches such a
// bundle, or a new ClusterExtension picks one), with operator-controller's "validating bundle"
// message; every other start reaches the latest, those that OLM v0 strands behind a skipped
// release included: operator-controller upgrades to a skipped bundle like any other.
func TestFieldSimulateV1AllReportsEveryStart(t *testing.T) {
	field, deps := fieldCatalogs(t)
	var out bytes.Buffer
	a := &simulate.Simulate{OLM: "v1", Catalog: field, All: true, Environment: predict.Environment{Catalogs: []string{deps + ",priority=10"}}, Output: "json", Out: &out}
	err := a.Run(context.Background())
	var ue *simulate.UnresolvableError
	if !errors.As(err, &ue) {
		t.Fatalf("error %v: want an UnresolvableError", err)
	}
	var got struct{ Paths []olmv1.Path }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	cfg, _ := synthcatalog.FieldConfigs()
	if want := synthcatalog.FieldPackages + len(cfg.Bundles); len(got.Paths) != want || ue.Starts != want {
		t.Errorf("%d paths (error over %d), want a new ClusterExtension per package and every bundle: %d", len(got.Paths), ue.Starts, want)
	}
	dependsOnSomething := func(i int) bool {
		return i == synthcatalog.FieldNeedsNothingProvides || i%8 == synthcatalog.FieldNeedsIssuer || i%8 == synthcatalog.FieldNeedsCertManager || i%5 == synthcatalog.FieldNeedsSibling
	}
	unresolvable := 0
	for _, p := range got.Paths {
		var i int
		if _, err := fmt.Sscanf(p.Package, "field-%02d-operator", &i); err != nil {
			t.Fatalf("package %s", p.Package)
		}
		switch {
		case dependsOnSomething(i):
			unresolvable++
			if p.Result != predict.Unresolvable || !strings.HasPrefix(p.Progressing, `validating bundle "`+p.Package) || !strings.Contains(p.Progressing, "has a dependency declared via property") {
				t.Errorf("%s from %v: %s (%s), want operator-controller's refusal of a bundle with a dependency", p.Package, p.Start, p.Result, p.Progressing)
			}
		case p.Result != predict.AtHead || p.End != p.Latest:
			t.Errorf("%s from %v: %s at %s (%s), want the latest %s", p.Package, p.Start, p.Result, p.End, p.Why(), p.Latest)
		}
	}
	if unresolvable != ue.Unresolvable {
		t.Errorf("%d unresolvable paths printed, the error says %d", unresolvable, ue.Unresolvable)
	}
}
