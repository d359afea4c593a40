package graph

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-graphviz"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/internal/fsutil"
	"github.com/csi-olm/csi-olm/internal/option"
)

// Formats the verb writes; svg and png are drawn in-process (Render).
var Formats = []string{"dot", "mermaid", "svg", "png"}

var extensions = map[string]string{"dot": ".dot", "mermaid": ".mmd", "svg": ".svg", "png": ".png"}

// Graph draws the upgrade graphs of a catalog, or of each catalog of a tree of per-minor catalogs.
type Graph struct {
	Dir       string
	Community string
	// Package limits the drawing to one package.
	Package string
	Formats []string
	// OutputDir receives <catalog>-<package>.<ext> files; empty prints the first format to Out.
	OutputDir string
	Out       io.Writer
}

// Run draws the graphs.
func (g *Graph) Run(ctx context.Context) error {
	for _, f := range g.Formats {
		if _, ok := extensions[f]; !ok {
			return fmt.Errorf("unknown format %q: use %s", f, strings.Join(Formats, ", "))
		}
	}
	catalogs, err := tree.Catalogs(g.Dir, g.Community)
	if err != nil {
		return err
	}
	var graphs []Package
	for _, c := range catalogs {
		cfg, err := loadValid(ctx, c.Dir)
		if err != nil {
			return err
		}
		var community *index.Catalog
		if c.Community != "" {
			if community, err = loadValid(ctx, c.Community); err != nil {
				return err
			}
		}
		graphs = append(graphs, Build(c.Name, cfg, community)...)
	}
	if g.Package != "" {
		var only []Package
		for _, p := range graphs {
			if p.Name == g.Package {
				only = append(only, p)
			}
		}
		if len(only) == 0 {
			return fmt.Errorf("package %q is not in %s", g.Package, g.Dir)
		}
		graphs = only
	}
	if g.OutputDir == "" {
		f := g.Formats[0]
		if f == "svg" || f == "png" {
			return option.Errorf("OutputDir", "the %s format writes files: name the directory", f)
		}
		for _, p := range graphs {
			out, _ := Render(ctx, p, f)
			if _, err := g.Out.Write(out); err != nil {
				return err
			}
		}
		return nil
	}
	if err := os.MkdirAll(g.OutputDir, 0o755); err != nil {
		return err
	}
	for _, p := range graphs {
		for _, f := range g.Formats {
			out, err := Render(ctx, p, f)
			if err != nil {
				return err
			}
			path := filepath.Join(g.OutputDir, p.Catalog+"-"+p.Name+extensions[f])
			if err := fsutil.WriteFileAtomic(path, out, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(g.Out, "wrote %s\n", path)
		}
	}
	return nil
}

// Render writes the package's graph in format. svg and png are drawn by Graphviz compiled to
// WebAssembly and run in-process (goccy/go-graphviz, at the version go.mod pins): a picture is
// the same on every machine, and nothing needs installing.
func Render(ctx context.Context, p Package, format string) ([]byte, error) {
	var gvFormat graphviz.Format
	switch format {
	case "dot":
		return DOT(p), nil
	case "mermaid":
		return Mermaid(p), nil
	case "svg":
		gvFormat = graphviz.SVG
	case "png":
		gvFormat = graphviz.PNG
	default:
		return nil, fmt.Errorf("unknown format %q: use %s", format, strings.Join(Formats, ", "))
	}
	gv, err := graphviz.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("starting Graphviz: %w", err)
	}
	defer gv.Close()
	g, err := graphviz.ParseBytes(DOT(p))
	if err != nil {
		return nil, fmt.Errorf("Graphviz cannot read the graph of %s: %w", p.Name, err)
	}
	defer g.Close()
	var out bytes.Buffer
	if err := gv.Render(ctx, g, gvFormat, &out); err != nil {
		return nil, fmt.Errorf("drawing %s as %s: %w", p.Name, format, err)
	}
	return out.Bytes(), nil
}

// loadValid loads a catalog, a directory or an image, and refuses one with load errors: a graph
// of half a catalog misleads.
func loadValid(ctx context.Context, dir string) (*index.Catalog, error) {
	l, err := load.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	c, problems := validation.Load(ctx, l.FS, dir)
	if len(problems) > 0 {
		var lines []string
		for _, p := range problems {
			lines = append(lines, p.String())
		}
		return nil, fmt.Errorf("cannot draw %s:\n%s", dir, strings.Join(lines, "\n"))
	}
	return index.New(c.Config), nil
}
