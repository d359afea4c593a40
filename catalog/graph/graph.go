package graph

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/internal/fsutil"
	"github.com/csi-olm/csi-olm/internal/option"
)

// Formats the verb writes; svg and png go through Graphviz's dot.
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
	// Dot is the Graphviz binary for svg and png.
	Dot string
	Out io.Writer
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
			out, _ := Render(ctx, p, f, g.Dot)
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
			out, err := Render(ctx, p, f, g.Dot)
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

// Render draws one package graph in a format of Formats; svg and png go through the Graphviz
// binary dot.
func Render(ctx context.Context, p Package, format, dot string) ([]byte, error) {
	switch format {
	case "dot":
		return DOT(p), nil
	case "mermaid":
		return Mermaid(p), nil
	case "svg", "png":
	default:
		return nil, fmt.Errorf("unknown format %q: use %s", format, strings.Join(Formats, ", "))
	}
	if _, err := exec.LookPath(dot); err != nil {
		return nil, fmt.Errorf("%s output needs Graphviz's dot (%v): run `make graphviz` (apt-get install graphviz)", format, err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, dot, "-T"+format)
	cmd.Stdin = bytes.NewReader(DOT(p))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dot -T%s: %w\n%s", format, err, stderr.String())
	}
	return stdout.Bytes(), nil
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
