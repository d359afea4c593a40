package simulate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/csi-olm/csi-olm/catalog/graph"
	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv1"
	"github.com/csi-olm/csi-olm/internal/option"
)

// v1Start is a start of the verb with --olm v1: a package, and the bundle installed from the
// catalog named from, or nothing.
type v1Start struct {
	pkg       string
	installed *olmv1.Installed
	from      string
}

// runV1 predicts operator-controller's choices. The ClusterCatalogs are Catalog and every
// Environment.Catalogs, by priority; InstalledFrom only supplies the installed bundle: a cluster
// that keeps that catalog as a ClusterCatalog too is said with --with-catalog.
func (a *Simulate) runV1(ctx context.Context) error {
	if !slices.Contains(Formats, a.Output) {
		return fmt.Errorf("unknown output %q: use %s", a.Output, strings.Join(Formats, ", "))
	}
	if err := a.v1Options(); err != nil {
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
	catalogs, closeEnv, err := olmv1.Open(ctx, a.Environment, predict.Loaded(tc))
	if err != nil {
		return err
	}
	defer closeEnv()
	r, err := olmv1.NewResolver(catalogs...)
	if err != nil {
		return err
	}
	// The installed bundles come from the target catalog, or from InstalledFrom's.
	from, fromIdx, fromDir := tc.Name, r.Index(tc.Name), tc.Arg
	if installedFrom != "" {
		fc, err := load.Open(ctx, installedFrom)
		if err != nil {
			return err
		}
		defer fc.Close()
		if fc.Name == tc.Name {
			fc.Name += "-installed"
		}
		cfg, err := predict.Loaded(fc).Read(ctx)
		if err != nil {
			return err
		}
		from, fromIdx, fromDir = fc.Name, index.New(cfg), fc.Arg
	}

	var starts []v1Start
	switch {
	case a.FromCluster:
		if starts, err = clusterV1Starts(ctx, &a.Cluster, r, tc.Arg); err != nil {
			return err
		}
	case a.All:
		starts = slices.DeleteFunc(a.v1AllStarts(r, from, fromIdx, a.InstalledFrom == ""), func(st v1Start) bool {
			return st.installed != nil && !a.runsAt(minor, fromIdx, st.pkg, st.installed.Name)
		})
	default:
		st, err := a.v1Start(r, from, fromIdx, fromDir, tc.Arg)
		if err != nil {
			return err
		}
		starts = []v1Start{st}
	}
	var paths []*olmv1.Path
	bad := UnresolvableError{OLM: "v1"}
	for i, st := range starts {
		a.progress(i, len(starts), tc.Arg)
		req := olmv1.Request{Package: st.pkg, Channels: a.Channels, Version: a.Version, Policy: olmv1.UpgradeConstraintPolicy(a.Policy), Installed: st.installed}
		p, err := r.Walk(ctx, req, st.from)
		var se *olmv1.SpecError
		if errors.As(err, &se) {
			// The options were checked: the catalog's own package name is what the API server
			// refuses, and no ClusterExtension can install it.
			p, err = &olmv1.Path{Catalogs: r.Catalogs(), Package: st.pkg, Channels: a.Channels, Version: a.Version, Policy: req.Policy, Result: predict.Unresolvable, Refused: se.Error()}, nil
			if st.installed != nil {
				p.Start = &predict.Bundle{Name: st.installed.Name, Version: st.installed.Version, Catalog: st.from}
			}
		}
		if err != nil {
			return err
		}
		bad.tally(p.Result)
		paths = append(paths, p)
	}
	a.progress(len(starts), len(starts), tc.Arg)
	if err := a.printV1(ctx, r, fromIdx, from, tc.Name, paths); err != nil {
		return err
	}
	return bad.found()
}

// v1Options refuses what only OLM v0 reads, and a ClusterExtension spec the API server or
// operator-controller refuses whatever the start: each names the option.
func (a *Simulate) v1Options() error {
	switch {
	case a.Start.Channel != "":
		return option.Errorf("Start.Channel", "a ClusterExtension's channels are Channels, not the start's")
	}
	if err := olmv1.RefuseInstalled(a.Environment); err != nil {
		return err
	}
	pkg := a.Start.Package
	if pkg == "" {
		// The package is checked with the spec's other fields, but only the package a start
		// names is known here: any valid name stands in for it.
		pkg = "package"
	}
	req := olmv1.Request{Package: pkg, Channels: a.Channels, Version: a.Version, Policy: olmv1.UpgradeConstraintPolicy(a.Policy)}
	var se *olmv1.SpecError
	if err := olmv1.CheckSpec(req); errors.As(err, &se) {
		field := map[string]string{"packageName": "Start.Package", "version": "Version", "upgradeConstraintPolicy": "Policy"}[strings.TrimPrefix(se.Field, "spec.source.catalog.")]
		if field == "" {
			field = "Channels"
		}
		return &option.Error{Field: field, Err: err}
	}
	if a.Version != "" {
		if err := olmv1.CheckVersionRange(a.Version); err != nil {
			return option.Errorf("Version", "operator-controller refuses it: desired version range %q is invalid: %v", a.Version, err)
		}
	}
	return nil
}

// v1AllStarts are every start of the catalog the bundles come from: for each package a
// ClusterCatalog carries (only Start.Package when given), a new ClusterExtension, unless the
// bundles come from another catalog, then each bundle installed, by version. With channels,
// only the packages and bundles of those channels.
func (a *Simulate) v1AllStarts(r *olmv1.Resolver, from string, fromIdx *index.Catalog, fresh bool) []v1Start {
	var out []v1Start
	for _, p := range fromIdx.Packages() {
		if p.Decl == nil || !r.HasPackage(p.Name) || a.Start.Package != "" && p.Name != a.Start.Package {
			continue
		}
		var bundles []*index.Bundle
		for _, b := range p.Bundles {
			if len(a.Channels) == 0 || slices.ContainsFunc(olmv1.AllowedChannels(p, a.Channels), func(ch *index.Channel) bool { return ch.Entry(b.Name) != nil }) {
				bundles = append(bundles, b)
			}
		}
		if len(bundles) == 0 {
			continue
		}
		if fresh {
			out = append(out, v1Start{pkg: p.Name})
		}
		sort.Slice(bundles, func(i, j int) bool {
			vi, vj := index.OrZero(bundles[i].Version), index.OrZero(bundles[j].Version)
			return vi.LT(vj) || vi.EQ(vj) && bundles[i].Name < bundles[j].Name
		})
		for _, b := range bundles {
			if b.Version == nil {
				continue
			}
			out = append(out, v1Start{pkg: p.Name, installed: &olmv1.Installed{Name: b.Name, Version: b.Version.String()}, from: from})
		}
	}
	return out
}

// v1Start is the one installed bundle Start names, read from the catalog it came from.
func (a *Simulate) v1Start(r *olmv1.Resolver, from string, fromIdx *index.Catalog, fromDir, targetDir string) (v1Start, error) {
	csv, pkg := a.Start.CSV, a.Start.Package
	if pkg == "" {
		pkgs := fromIdx.PackagesOf(csv)
		switch len(pkgs) {
		case 0:
			return v1Start{}, &predict.StartError{Kind: predict.CSVNotInCatalog, CSV: csv, Catalog: fromDir}
		case 1:
			pkg = pkgs[0]
		default:
			return v1Start{}, &predict.StartError{Kind: predict.AmbiguousCSV, CSV: csv, Catalog: fromDir, Choices: pkgs}
		}
	}
	p := fromIdx.Package(pkg)
	var b *index.Bundle
	if p != nil {
		b = p.Bundles[csv]
	}
	if b == nil {
		return v1Start{}, &predict.StartError{Kind: predict.CSVNotInCatalog, CSV: csv, Package: pkg, Catalog: fromDir}
	}
	if b.Version == nil {
		return v1Start{}, fmt.Errorf("bundle %q in catalog %s has no semver version", csv, fromDir)
	}
	if !r.HasPackage(pkg) {
		return v1Start{}, &predict.StartError{Kind: predict.NoPackage, Package: pkg, Catalog: targetDir}
	}
	// A channel no ClusterCatalog's package has is a typo more often than a spec: operator-
	// controller would only report that it found nothing.
	if len(a.Channels) > 0 {
		var known []string
		for _, c := range r.Catalogs() {
			if cp := r.Index(c.Name).Package(pkg); cp != nil {
				known = append(known, cp.ChannelNames()...)
			}
		}
		slices.Sort(known)
		known = slices.Compact(known)
		if !slices.ContainsFunc(a.Channels, func(ch string) bool { return slices.Contains(known, ch) }) {
			return v1Start{}, &predict.StartError{Kind: predict.NoChannel, Package: pkg, Channel: strings.Join(a.Channels, ", "), Catalog: targetDir, Choices: known}
		}
	}
	return v1Start{pkg: pkg, installed: &olmv1.Installed{Name: b.Name, Version: b.Version.String()}, from: from}, nil
}

func (a *Simulate) printV1(ctx context.Context, r *olmv1.Resolver, fromIdx *index.Catalog, from, target string, paths []*olmv1.Path) error {
	if done, err := a.writePaths(func() string { return olmv1.Text(paths) }, paths); done {
		return err
	}
	if len(paths) != 1 {
		return fmt.Errorf("a picture shows one path and there are %d: start from one installed bundle", len(paths))
	}
	var foreign *index.Catalog
	if from != target {
		foreign = fromIdx
	}
	g, err := r.Picture(paths[0], foreign)
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
