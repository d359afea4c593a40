package layout_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sequentialLine is the Makefile's list of the packages `make test` runs without the race
// detector because their code starts no goroutine.
var sequentialLine = regexp.MustCompile(`(?m)^SEQUENTIAL_PACKAGES := (.+)$`)

// TestSequentialPackagesStartNoGoroutine keeps the Makefile's SEQUENTIAL_PACKAGES honest: the
// race detector finds nothing in code that runs on one goroutine, so a package may skip it only
// while neither it nor any package of the module it imports starts one (a go statement, or an
// errgroup). Their tests' harness (the test bed, testutil) may: it is race-tested in its own
// packages.
func TestSequentialPackagesStartNoGoroutine(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := sequentialLine.FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile has no SEQUENTIAL_PACKAGES := line")
	}
	listed := strings.Fields(string(m[1]))
	if len(listed) == 0 {
		t.Fatal("SEQUENTIAL_PACKAGES is empty")
	}
	pkgs := map[string]pkg{}
	starts := map[string][]string{} // module package -> where it starts goroutines
	for _, p := range goList(t, "./...") {
		pkgs[p.ImportPath] = p
		starts[p.ImportPath] = goroutineStarts(t, p)
	}
	var problems []string
	for _, rel := range listed {
		p, ok := pkgs[module+"/"+strings.TrimPrefix(rel, "./")]
		if !ok {
			problems = append(problems, fmt.Sprintf("SEQUENTIAL_PACKAGES: %s is not a package of the module", rel))
			continue
		}
		for _, dep := range append([]string{p.ImportPath}, p.Deps...) {
			for _, where := range starts[dep] {
				problems = append(problems, fmt.Sprintf("SEQUENTIAL_PACKAGES: %s runs without the race detector, but %s starts a goroutine at %s", rel, strings.TrimPrefix(dep, module+"/"), where))
			}
		}
	}
	slices.Sort(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// goroutineStarts lists where a package's non-test code starts a goroutine, as file:line.
func goroutineStarts(t *testing.T, p pkg) []string {
	t.Helper()
	var where []string
	fset := token.NewFileSet()
	rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		at := func(pos token.Pos) string {
			return fmt.Sprintf("%s:%d", filepath.Join(rel, name), fset.Position(pos).Line)
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"golang.org/x/sync/errgroup"` {
				where = append(where, at(imp.Pos())+" (errgroup)")
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				where = append(where, at(g.Pos()))
			}
			return true
		})
	}
	return where
}
