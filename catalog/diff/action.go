package diff

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/csi-olm/csi-olm/catalog/graph"
	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv1"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/option"
)

// Formats the verb prints: a report, the changes as data, or a package's graph with the changes
// marked.
var Formats = []string{"text", "json", "dot", "mermaid", "svg", "png"}

// Diff is the verb.
type Diff struct {
	Old, New string
	// Environment is what else the cluster has, the same for both catalogs: catalogs providing
	// dependencies, installed operators.
	Environment predict.Environment
	// Breaking reports only the changes that strand users, and fails when there is one.
	Breaking bool
	Output   string
	// Package is the package a picture shows; empty takes the only one that changed.
	Package string
	Out     io.Writer
	// OLM is the OLM that judges who is worse off: "v0" (the default; Subscriptions) or "v1"
	// (ClusterExtensions, operator-controller's rule).
	OLM string
}

// Run compares the catalogs and prints the changes.
func (d *Diff) Run(ctx context.Context) error {
	if !slices.Contains(Formats, d.Output) {
		return fmt.Errorf("unknown output %q: use %s", d.Output, strings.Join(Formats, ", "))
	}
	if tree.IsTree(d.Old) || tree.IsTree(d.New) {
		return d.runTrees(ctx)
	}
	judge := d.judgeV0
	switch d.OLM {
	case "", "v0":
	case "v1":
		judge = d.judgeV1
	default:
		return option.Errorf("OLM", "unknown OLM %q: use v0 (Subscriptions, resolved by OLM's catalog operator) or v1 (ClusterExtensions, resolved by operator-controller)", d.OLM)
	}
	opened, closeOpened, err := d.open(ctx)
	if err != nil {
		return err
	}
	defer closeOpened()
	j, err := judge(ctx, opened)
	if err != nil {
		return err
	}
	defer j.close()
	report, err := Compare(ctx, d.Old, d.New, j.old, j.new, j.changed, j.judge)
	if err != nil {
		return err
	}
	return d.print(ctx, report, j.old, j.new)
}

// judged is an OLM's judge over the catalogs, their models, and the packages to ask it about.
type judged struct {
	judge    predict.Judge
	old, new *index.Catalog
	changed  map[string]bool
	close    func()
}

// judgeV0 asks OLM's own resolver: old and new are two versions of one CatalogSource, beside the
// environment's, and a cluster serves one or the other. Only the packages that changed are asked
// of OLM, so only those, and what they depend on, are served.
func (d *Diff) judgeV0(ctx context.Context, opened []predict.Catalog) (*judged, error) {
	cluster, err := d.Environment.Open(ctx, "old", "new")
	if err != nil {
		return nil, err
	}
	catalogs, err := olmv0.Load(ctx, cluster, olmv0.Source(opened))
	if err != nil {
		cluster.Close()
		return nil, err
	}
	o, n := catalogs.Index("old"), catalogs.Index("new")
	changed := Changed(o, n, true)
	roots := []string{}
	for pkg, c := range changed {
		if c {
			roots = append(roots, pkg)
		}
	}
	if d.Package != "" {
		roots = append(roots, d.Package)
	}
	sim, err := catalogs.Serve(ctx, roots)
	if err != nil {
		cluster.Close()
		return nil, err
	}
	return &judged{
		judge: olmv0.Judge{Simulator: sim, Old: "old", New: "new"}, old: o, new: n, changed: changed,
		close: func() { sim.Close(); cluster.Close() },
	}, nil
}

// judgeV1 asks operator-controller's rule: each catalog is a ClusterCatalog beside the
// environment's, which serve the same for both. operator-controller resolves no dependencies:
// only packages whose own content changed are compared.
func (d *Diff) judgeV1(ctx context.Context, opened []predict.Catalog) (*judged, error) {
	catalogs, closeEnv, err := olmv1.Open(ctx, d.Environment, opened...)
	if err != nil {
		return nil, err
	}
	others := catalogs[2:]
	oldR, err := olmv1.NewResolver(append([]olmv1.Catalog{catalogs[0]}, others...)...)
	if err != nil {
		closeEnv()
		return nil, err
	}
	newR, err := olmv1.NewResolver(append([]olmv1.Catalog{catalogs[1]}, others...)...)
	if err != nil {
		closeEnv()
		return nil, err
	}
	o, n := oldR.Index("old"), newR.Index("new")
	return &judged{
		judge: olmv1.Judge{Old: oldR, New: newR, OldCatalog: "old"}, old: o, new: n, changed: Changed(o, n, false),
		close: closeEnv,
	}, nil
}

// open reads the two catalogs, named old and new.
func (d *Diff) open(ctx context.Context) ([]predict.Catalog, func(), error) {
	var opened []predict.Catalog
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	for _, c := range []struct{ name, arg string }{{"old", d.Old}, {"new", d.New}} {
		l, err := load.Open(ctx, c.arg)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("reading the %s catalog: %w", c.name, err)
		}
		closers = append(closers, l.Close)
		o := predict.Loaded(l)
		o.Name = c.name
		opened = append(opened, o)
	}
	return opened, closeAll, nil
}

// print writes the report, or its picture, and fails with --breaking when something breaks.
func (d *Diff) print(ctx context.Context, report *Report, o, n *index.Catalog) error {
	var err error
	if d.Breaking {
		report.Changes = report.Breaking()
	}
	switch d.Output {
	case "text":
		_, err = io.WriteString(d.Out, Text(report, d.Breaking))
	case "json":
		enc := json.NewEncoder(d.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	default:
		err = d.picture(ctx, report, o, n)
	}
	if err != nil {
		return err
	}
	if n := len(report.Breaking()); d.Breaking && n > 0 {
		return exitcode.Found(fmt.Errorf("%d breaking change(s) from %s to %s", n, d.Old, d.New))
	}
	return nil
}

func (d *Diff) picture(ctx context.Context, report *Report, o, n *index.Catalog) error {
	pkg := d.Package
	if pkg == "" {
		var changed []string
		for _, c := range report.Changes {
			if !slices.Contains(changed, c.Package) {
				changed = append(changed, c.Package)
			}
		}
		if len(changed) != 1 {
			return option.Errorf("Package", "a picture shows one package and %d changed (%s): name one", len(changed), strings.Join(changed, ", "))
		}
		pkg = changed[0]
	}
	g, err := Picture(pkg, o, n)
	if err != nil {
		return err
	}
	out, err := graph.Render(ctx, *g, d.Output)
	if err != nil {
		return err
	}
	_, err = d.Out.Write(out)
	return err
}

// Text renders the report for people: + added, - removed, ~ changed, ! breaking.
func Text(r *Report, breakingOnly bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s -> %s\n", r.Old, r.New)
	if len(r.Changes) == 0 {
		if breakingOnly {
			b.WriteString("no breaking changes\n")
		} else {
			b.WriteString("no changes\n")
		}
		b.WriteString(alreadyBroken(r))
		return b.String()
	}
	pkg := ""
	for _, c := range r.Changes {
		if c.Package != pkg {
			pkg = c.Package
			fmt.Fprintf(&b, "package %s\n", pkg)
		}
		sign := "~"
		switch {
		case c.Breaking:
			sign = "!"
		case strings.HasSuffix(string(c.Kind), "-added"):
			sign = "+"
		case strings.HasSuffix(string(c.Kind), "-removed"):
			sign = "-"
		}
		fmt.Fprintf(&b, "  %s %s\n", sign, c.Message)
	}
	fmt.Fprintf(&b, "%d change(s), %d breaking\n", len(r.Changes), len(r.Breaking()))
	b.WriteString(alreadyBroken(r))
	return b.String()
}

// alreadyBroken lists, apart from the changes, what the old catalog already did wrong.
func alreadyBroken(r *Report) string {
	if len(r.AlreadyBroken) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "already stranded before this change (%d start(s), not changes):\n", len(r.AlreadyBroken))
	for _, c := range r.AlreadyBroken {
		fmt.Fprintf(&b, "  package %s: %s\n", c.Package, c.Message)
	}
	return b.String()
}
