package graph_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/catalog/graph"
	"github.com/csi-olm/csi-olm/test/testutil"
)

func draw(t *testing.T, formats []string, args ...string) (string, string, error) {
	t.Helper()
	out := t.TempDir()
	var log bytes.Buffer
	g := &graph.Graph{Dir: args[0], Formats: formats, OutputDir: out, Out: &log}
	if len(args) > 1 {
		g.Community = args[1]
	}
	return out, log.String(), g.Run(context.Background())
}

// TestCertifiedEFSGraph draws the certified EFS package of the newest minor with the community
// catalog of that minor, and checks the edges the source switch relies on, in both text formats.
func TestCertifiedEFSGraph(t *testing.T) {
	out, _, err := draw(t, []string{"dot", "mermaid"}, "../certified/v4.11", "../community/v4.11")
	if err != nil {
		t.Fatal(err)
	}
	dot, err := os.ReadFile(filepath.Join(out, "certified-v4.11-aws-efs-operator.dot"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"stable/aws-efs-csi-driver-operator.v4.11.0" [label="4.11.0\nhead", style="rounded,bold"`,
		`"foreign/aws-efs-operator.v0.0.8" [label="community 0.0.8", style="rounded,dashed"]`,
		`"foreign/aws-efs-operator.v0.0.6" -> "stable/aws-efs-csi-driver-operator.v4.11.0" [label="skipRange", style=dotted]`,
		`"foreign/aws-efs-operator.v0.0.8" -> "4.11/aws-efs-csi-driver-operator.v4.11.0" [label="skipRange", style=dotted]`,
		`label="channel stable (default)"`,
		`label="channel 4.11"`,
	} {
		if !strings.Contains(string(dot), want) {
			t.Errorf("DOT lacks %s:\n%s", want, dot)
		}
	}
	mmd, err := os.ReadFile(filepath.Join(out, "certified-v4.11-aws-efs-operator.mmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"flowchart LR", `["4.11.0 (head)"]:::head`, `["community 0.0.7"]:::foreign`, "-.->|skipRange|"} {
		if !strings.Contains(string(mmd), want) {
			t.Errorf("Mermaid lacks %s:\n%s", want, mmd)
		}
	}
}

// A tree of per-minor catalogs is drawn minor by minor, each file named after its minor.
func TestTreeIsDrawnPerMinor(t *testing.T) {
	out, _, err := draw(t, []string{"mermaid"}, "../community")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"v4.5", "v4.9", "v4.11"} {
		mmd, err := os.ReadFile(filepath.Join(out, "community-"+m+"-aws-efs-operator.mmd"))
		if err != nil || !strings.Contains(string(mmd), "-->|replaces|") || !strings.Contains(string(mmd), "title: community-"+m+" aws-efs-operator") {
			t.Errorf("community %s: %v\n%s", m, err, mmd)
		}
	}
}

// The committed pictures are golden files; `make catalog` redraws them all, -update the dot and
// Mermaid ones (svg needs Graphviz).
var update = flag.Bool("update", false, "redraw the committed dot and Mermaid graphs")

func TestCommittedGraphsAreCurrent(t *testing.T) {
	for _, c := range [][]string{{"../community"}, {"../certified", "../community"}} {
		out, _, err := draw(t, []string{"dot", "mermaid"}, c...)
		if err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(out)
		if len(entries) == 0 {
			t.Fatalf("nothing drawn for %v", c)
		}
		testutil.CheckGolden(t, filepath.Join("..", "graphs"), testutil.Snapshot(t, out), *update,
			"run `make catalog` or `go test ./catalog/graph -update`")
	}
}

func TestGraphErrors(t *testing.T) {
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "catalog.yaml"), []byte("schema: olm.package\nname: [x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		g    graph.Graph
		want string
	}{
		{"unknown format", graph.Graph{Dir: "../certified", Formats: []string{"gif"}}, `unknown format "gif"`},
		{"missing catalog", graph.Graph{Dir: "../nowhere", Formats: []string{"dot"}}, "catalog ../nowhere: no such directory, and not an image reference"},
		{"broken catalog", graph.Graph{Dir: broken, Formats: []string{"dot"}}, "not valid YAML or JSON"},
		{"unknown package", graph.Graph{Dir: "../certified", Package: "nope", Formats: []string{"dot"}}, `package "nope" is not in ../certified`},
		{"picture to stdout", graph.Graph{Dir: "../certified", Formats: []string{"svg"}}, "OutputDir: the svg format writes files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.g.Out = &bytes.Buffer{}
			if err := tt.g.Run(context.Background()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// The pictures need no Graphviz on the machine, and come out the same on every run: make verify
// compares the committed SVGs byte for byte. The committed SVG is what this run draws.
func TestPicturesNeedNoGraphviz(t *testing.T) {
	t.Setenv("PATH", "")
	out, _, err := draw(t, []string{"svg", "png"}, "../certified/v4.11", "../community/v4.11")
	if err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(out, "certified-v4.11-aws-efs-operator.svg"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../graphs/certified-v4.11-aws-efs-operator.svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(svg, committed) {
		t.Errorf("the SVG drawn differs from the committed one (make catalog redraws it)")
	}
	png, err := os.ReadFile(filepath.Join(out, "certified-v4.11-aws-efs-operator.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("the PNG is no PNG: %v, %q", err, png[:min(len(png), 8)])
	}
}
