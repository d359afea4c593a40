// Package simulate is the `csi-olm catalog simulate` verb: it predicts, offline, the bundles an
// OLM installs one after the other from an installed bundle, and prints them. OLM v0's prediction
// (Subscriptions) is catalog/predict/olmv0's, OLM v1's (ClusterExtensions, --olm v1)
// catalog/predict/olmv1's; this package reads the options, the catalogs and the cluster, and
// prints.
package simulate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/catalog/graph"
	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/option"
)

// Formats the verb prints: a report, the paths as data, or the upgrade graph with the path marked.
var Formats = []string{"text", "yaml", "json", "dot", "mermaid", "svg", "png"}

// Simulate is the verb: it predicts OLM's path from one installed CSV, from every start the
// catalog offers, or from every Subscription of a cluster.
type Simulate struct {
	// Catalog is the catalog the Subscription's source serves: a directory or a catalog image,
	// or a tree of per-minor catalogs (catalog/tree), of which the catalog of Minor is read.
	Catalog string
	// InstalledFrom is the catalog the installed CSV came from, when another: the community ->
	// certified source switch. A tree is read at Minor too.
	InstalledFrom string
	// Minor is the OpenShift minor ("4.11" or "v4.11") whose catalogs a tree gives; empty with
	// FromCluster reads the cluster's.
	Minor string
	// Environment is what else the cluster has: catalogs providing dependencies, installed
	// operators.
	Environment predict.Environment
	Start       olmv0.Start
	// All simulates every start: each bundle of each channel of Catalog, and with InstalledFrom
	// each of its bundles whose package Catalog carries, in the channel it is in.
	All bool
	// FromCluster reads the starts from the cluster's Subscriptions and installed CSVs.
	FromCluster bool
	Cluster     kube.ClusterOptions
	Output      string
	Out         io.Writer

	// OLM is the OLM whose choices are predicted: "v0" (the default; Subscriptions, resolved by
	// OLM's catalog operator) or "v1" (ClusterExtensions, resolved by operator-controller).
	OLM string
	// Channels are the channels of the subscription: one for v0, where Start.Channel may name
	// it too; any number for a ClusterExtension's spec.source.catalog.channels.
	Channels []string
	// Version is a ClusterExtension's version range (v1 only).
	Version string
	// Policy is a ClusterExtension's upgrade constraint policy (v1 only; "" is CatalogProvided).
	Policy string
	// Progress, when set, hears how far a simulation of many starts has come.
	Progress io.Writer

	// notRunnable are the bundles of a minor's catalog that All leaves out: no release of the
	// minor can run them, so no cluster at it has them installed.
	notRunnable   []string
	notRunnableAt openshift.Minor
}

// runsAt says whether some release of minor m, when the minor is known, can run the bundle of
// the catalog idx; it records the bundles it says no to.
func (a *Simulate) runsAt(m *openshift.Minor, idx *index.Catalog, pkg, bundle string) bool {
	if m == nil || idx == nil {
		return true
	}
	p := idx.Package(pkg)
	if p == nil || p.Bundles[bundle] == nil || index.Limits(p.Bundles[bundle].Decl).RunsAt(*m) {
		return true
	}
	a.notRunnableAt = *m
	if !slices.Contains(a.notRunnable, bundle) {
		a.notRunnable = append(a.notRunnable, bundle)
	}
	return false
}

// progress tells Progress, at every tenth of many starts, how many are done.
func (a *Simulate) progress(done, of int, catalog string) {
	if a.Progress == nil || of < 20 {
		return
	}
	if done == 0 || done == of || done*10/of != (done-1)*10/of {
		fmt.Fprintf(a.Progress, "simulated %d of %d starts of %s\n", done, of, catalog)
	}
}

// ErrOneStart is a verb given no start, or more than one kind.
var ErrOneStart = errors.New("say where to start: one installed CSV, every start of the catalog, or the cluster's Subscriptions")

// UnresolvableError is a run in which OLM cannot resolve some starts, or would upgrade some in
// a circle; every path was printed.
type UnresolvableError struct {
	Unresolvable, Loops, Starts int
	// OLM is the OLM simulated, "" for v0.
	OLM string
}

func (e *UnresolvableError) Error() string {
	who, why := "OLM", "their ResolutionFailed"
	if e.OLM == "v1" {
		who, why = "operator-controller", "their Progressing message"
	}
	var parts []string
	if e.Unresolvable > 0 {
		parts = append(parts, fmt.Sprintf("%s cannot resolve %d of %d start(s): see %s above", who, e.Unresolvable, e.Starts, why))
	}
	if e.Loops > 0 {
		parts = append(parts, fmt.Sprintf("%s would upgrade %d of %d start(s) in a circle: see their loop above", who, e.Loops, e.Starts))
	}
	return strings.Join(parts, "; ")
}

// tally counts the starts that end badly.
func (e *UnresolvableError) tally(r predict.Result) {
	e.Starts++
	switch r {
	case predict.Unresolvable:
		e.Unresolvable++
	case predict.Loops:
		e.Loops++
	}
}

// found is the run's verdict once every start is tallied.
func (e *UnresolvableError) found() error {
	if e.Unresolvable+e.Loops > 0 {
		return exitcode.Found(e)
	}
	return nil
}

// Run simulates and prints every start's path. It fails, after printing them all, when OLM
// cannot resolve one or would upgrade one in a circle.
func (a *Simulate) Run(ctx context.Context) error {
	switch a.OLM {
	case "", "v0":
	case "v1":
		return a.runV1(ctx)
	default:
		return option.Errorf("OLM", "unknown OLM %q: use v0 (Subscriptions, resolved by OLM's catalog operator) or v1 (ClusterExtensions, resolved by operator-controller)", a.OLM)
	}
	if !slices.Contains(Formats, a.Output) {
		return fmt.Errorf("unknown output %q: use %s", a.Output, strings.Join(Formats, ", "))
	}
	if err := a.v0Options(); err != nil {
		return err
	}
	modes := 0
	for _, on := range []bool{a.Start.CSV != "", a.All, a.FromCluster} {
		if on {
			modes++
		}
	}
	if modes != 1 {
		return ErrOneStart
	}
	catalog, installedFrom, minor, err := a.minorCatalogs(ctx)
	if err != nil {
		return err
	}
	tc, err := load.Open(ctx, catalog)
	if err != nil {
		return err
	}
	defer tc.Close()
	opened := []predict.Catalog{predict.Loaded(tc)}
	if installedFrom != "" {
		fc, err := load.Open(ctx, installedFrom)
		if err != nil {
			return err
		}
		defer fc.Close()
		if fc.Name == tc.Name {
			fc.Name += "-installed"
		}
		opened = append(opened, predict.Loaded(fc))
	}
	names := make([]string, len(opened))
	for i, c := range opened {
		names[i] = c.Name
	}
	cluster, err := a.Environment.Open(ctx, names...)
	if err != nil {
		return err
	}
	defer cluster.Close()
	sources := make([]olmv0.Source, len(opened))
	for i, c := range opened {
		sources[i] = olmv0.Source{c}
	}
	catalogs, err := olmv0.Load(ctx, cluster, sources...)
	if err != nil {
		return err
	}
	sim, err := catalogs.Serve(ctx, nil)
	if err != nil {
		return err
	}
	defer sim.Close()

	target := tc.Name
	var starts []olmv0.Start
	switch {
	case a.FromCluster:
		if starts, err = clusterStarts(ctx, &a.Cluster, sim, target, tc.Arg); err != nil {
			return err
		}
	case a.All && len(opened) > 1:
		starts = sim.StartsFrom(opened[1].Name, target)
	case a.All:
		starts = sim.Starts(target)
	default:
		st := a.Start
		if len(opened) > 1 {
			st.InstalledFrom = opened[1].Name
		}
		starts = []olmv0.Start{st}
	}
	if a.All {
		// Every start is an install that runs: what it requires is installed beside it.
		starts = slices.DeleteFunc(starts, func(st olmv0.Start) bool {
			from := cmp.Or(st.InstalledFrom, target)
			return !a.runsAt(minor, sim.Index(from), st.Package, st.CSV)
		})
		for i := range starts {
			starts[i].Running = true
		}
	}
	var paths []*olmv0.Path
	var bad UnresolvableError
	for i, st := range starts {
		a.progress(i, len(starts), tc.Arg)
		st.Existing = append(st.Existing, sim.Existing()...)
		p, err := sim.Simulate(ctx, target, st)
		if err != nil {
			return err
		}
		bad.tally(p.Result)
		paths = append(paths, p)
	}
	a.progress(len(starts), len(starts), tc.Arg)
	if err := a.print(ctx, sim, paths); err != nil {
		return err
	}
	return bad.found()
}

// minorCatalogs are the catalogs to read: Catalog and InstalledFrom as given, or of a tree of
// per-minor catalogs, the catalog of the minor asked for, or the cluster's.
func (a *Simulate) minorCatalogs(ctx context.Context) (catalog, installedFrom string, minor *openshift.Minor, err error) {
	catalog, installedFrom = a.Catalog, a.InstalledFrom
	trees := tree.IsTree(catalog) || tree.IsTree(installedFrom)
	if a.Minor == "" && !(trees && a.FromCluster) {
		return catalog, installedFrom, nil, nil
	}
	var m openshift.Minor
	switch {
	case a.Minor != "":
		if m, err = openshift.ParseMinor(a.Minor); err != nil {
			return "", "", nil, &option.Error{Field: "Minor", Err: err}
		}
	default:
		cfg, err := a.Cluster.RESTConfig()
		if err != nil {
			return "", "", nil, err
		}
		if m, err = kube.ClusterMinor(ctx, cfg); err != nil {
			return "", "", nil, option.Errorf("Minor", "the catalogs are trees of per-minor catalogs, and the cluster's minor cannot be read: %w", err)
		}
	}
	at := func(dir string) (string, error) {
		if dir == "" || !tree.IsTree(dir) {
			return dir, nil
		}
		t, err := tree.Open(dir)
		if err != nil {
			return "", err
		}
		if !t.Has(m) {
			names := make([]string, len(t.Minors))
			for i, have := range t.Minors {
				names[i] = have.Index()
			}
			return "", fmt.Errorf("catalog tree %s has no catalog for OpenShift %s (minors: %s)", dir, m, strings.Join(names, ", "))
		}
		return t.Path(m), nil
	}
	if catalog, err = at(catalog); err != nil {
		return "", "", nil, err
	}
	if installedFrom, err = at(installedFrom); err != nil {
		return "", "", nil, err
	}
	return catalog, installedFrom, &m, nil
}

// v0Options refuses what only a ClusterExtension has, and takes the Subscription's channel from
// Channels.
func (a *Simulate) v0Options() error {
	switch {
	case a.Version != "":
		return option.Errorf("Version", "a version range is a ClusterExtension's (--olm v1); a Subscription follows its channel")
	case a.Policy != "":
		return option.Errorf("Policy", "an upgrade constraint policy is a ClusterExtension's (--olm v1); a Subscription always follows the catalog's edges")
	case len(a.Channels) > 1:
		return option.Errorf("Channels", "a Subscription names one channel, and %d were given (%s): several are for a ClusterExtension (--olm v1)", len(a.Channels), strings.Join(a.Channels, ", "))
	case len(a.Channels) == 1 && a.Start.Channel != "" && a.Start.Channel != a.Channels[0]:
		return option.Errorf("Channels", "channel %q, and %q as the start's: name one", a.Channels[0], a.Start.Channel)
	case len(a.Channels) == 1:
		a.Start.Channel = a.Channels[0]
	}
	return nil
}

// writePaths prints paths as text or data, whichever OLM they are of; it reports false, having
// written nothing, for the picture formats.
func (a *Simulate) writePaths(text func() string, paths any) (bool, error) {
	data := map[string]any{"paths": paths}
	if len(a.notRunnable) > 0 {
		data["notRunnable"] = a.notRunnable
	}
	switch a.Output {
	case "text":
		report := text()
		if len(a.notRunnable) > 0 {
			report += fmt.Sprintf("Not simulated, as no release of %s can run them (catalog validate says why): %s\n", a.notRunnableAt, strings.Join(a.notRunnable, ", "))
		}
		_, err := io.WriteString(a.Out, report)
		return true, err
	case "yaml":
		out, err := yaml.Marshal(data)
		if err != nil {
			return true, err
		}
		_, err = a.Out.Write(out)
		return true, err
	case "json":
		enc := json.NewEncoder(a.Out)
		enc.SetIndent("", "  ")
		return true, enc.Encode(data)
	}
	return false, nil
}

func (a *Simulate) print(ctx context.Context, sim *olmv0.Simulator, paths []*olmv0.Path) error {
	if done, err := a.writePaths(func() string { return olmv0.Text(paths) }, paths); done {
		return err
	}
	if len(paths) != 1 {
		return fmt.Errorf("a picture shows one path and there are %d: start from one installed CSV", len(paths))
	}
	g, err := sim.Picture(paths[0])
	if err != nil {
		return err
	}
	out, err := graph.Render(ctx, *g, a.Output)
	if err != nil {
		return err
	}
	_, err = a.Out.Write(out)
	return err
}
