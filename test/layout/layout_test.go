// Package layout_test keeps the repository's shape: which layer may import which, what the
// release binaries link, and that every document the code cites is in the repository. The rules
// are written down in docs/architecture.md#layers; these tests are how they stay true.
package layout_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/csi-olm/csi-olm"

// root is the repository's top directory: the tests run in test/layout.
const root = "../.."

// pkg is the part of `go list -json` these tests read.
type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

// goList runs `go list -json` in the repository and decodes its stream of packages.
func goList(t *testing.T, args ...string) []pkg {
	t.Helper()
	return goListAs[pkg](t, nil, append([]string{"-json"}, args...)...)
}

// goListAs runs `go list` with args (one of them -json) in the repository, with env added to the
// environment, and decodes its stream of packages into T.
func goListAs[T any](t *testing.T, env []string, args ...string) []T {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v %v: %v\n%s", env, args, err, stderr.String())
	}
	var pkgs []T
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p T
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// Layers, lowest first. A package may import its own layer's packages and lower layers', with
// the exceptions below; the names are paths relative to the module.
const (
	leaf   = iota // shared leaves: names, kube helpers, API types, CRDs, embedded assets
	domain        // bundle, catalog, images, release, operator, sharedvolume, migrate, testbed, efs-utils-base
	cli           // cmd: thin cobra wiring over domain actions
	tests         // test: suites, fixtures and test helpers
)

var layerNames = []string{"leaf", "domain", "cli", "test"}

// leaves are the packages below the domains, by path or path prefix (ending in "/").
var leaves = []string{
	"internal/",
	"sharedvolume/api/",
	"sharedvolume/crd",
	"operator/api/",
	"operator/fencecrd",
	"operator/assets",
	"bundle/drivers/icons",
	"docs/ci",
}

// leafPattern matches the API types and CRDs of the EBS, Manila and community EFS definitions.
var leafPattern = regexp.MustCompile(`^bundle/drivers/[a-z]+/(v1alpha1|[a-z]+crd)$`)

// domainImports are the only imports allowed from one domain into another: catalogs are built
// from bundles, bundle images too, a release publishes all three, the operator runs the
// SharedVolume controller in its process, the test bed builds and pushes its real node's pause
// image like any other image, and a Subscription's migration asks the target catalog where OLM
// takes the installed operator with the catalog verbs' own walk and checks the SharedVolumes
// against the CRD it lands on with `efs check-sharedvolumes`' own validation; the move to OLM v1
// checks the bundle it lands on with `bundle validate --olm v1`'s own rules.
var domainImports = map[string][]string{
	"catalog":  {"bundle"},
	"images":   {"bundle"},
	"migrate":  {"bundle", "catalog", "sharedvolume"},
	"release":  {"bundle", "catalog", "images"},
	"operator": {"sharedvolume"},
	"testbed":  {"images"},
}

func layerOf(rel string) int {
	switch top, _, _ := strings.Cut(rel, "/"); {
	case top == "cmd":
		return cli
	case top == "test":
		return tests
	case leafPattern.MatchString(rel):
		return leaf
	}
	for _, l := range leaves {
		if rel == strings.TrimSuffix(l, "/") || (strings.HasSuffix(l, "/") && strings.HasPrefix(rel, l)) {
			return leaf
		}
	}
	return domain
}

func topDir(rel string) string {
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// importProblem says why from may not import to, or returns "" when it may.
func importProblem(from, to string) string {
	lf, lt := layerOf(from), layerOf(to)
	switch {
	case lt > lf:
		return "a " + layerNames[lf] + " package imports the higher " + layerNames[lt] + " layer"
	case lf == leaf && lt == leaf:
		return ""
	case lf == domain && lt == domain && topDir(from) != topDir(to) && !slices.Contains(domainImports[topDir(from)], topDir(to)):
		return "domain " + topDir(from) + " may not import domain " + topDir(to)
	case lf == cli && lt == cli && topDir(strings.TrimPrefix(from, "cmd/")) != topDir(strings.TrimPrefix(to, "cmd/")):
		return "one binary's CLI imports another's"
	}
	return ""
}

func TestImportRule(t *testing.T) {
	for _, tt := range []struct {
		from, to string
		ok       bool
	}{
		{"cmd/csi-olm/bundle", "bundle/generate", true},
		{"catalog/render", "bundle/definition", true},
		{"operator", "sharedvolume/controller", true},
		{"migrate/cso", "internal/names/ebs", true},
		{"bundle/drivers/efsdriver", "sharedvolume/crd", true},
		{"test/e2e", "cmd/csi-olm", true},
		{"bundle/generate", "cmd/csi-olm/bundle", false},
		{"operator/releasefinalizer", "test/fixture", false},
		{"internal/kube", "operator", false},
		{"migrate/subscription", "operator", false},
		{"bundle/registryv1", "catalog/validation", false},
		{"cmd/csi-olm", "cmd/aws-efs-csi-driver-operator", false},
	} {
		if got := importProblem(tt.from, tt.to) == ""; got != tt.ok {
			t.Errorf("%s -> %s allowed = %v, want %v (%s)", tt.from, tt.to, got, tt.ok, importProblem(tt.from, tt.to))
		}
	}
}

// TestImportsGoOneWay checks every import of every package of the module (not its tests, which
// may use the test bed and fixtures) against the layers.
func TestImportsGoOneWay(t *testing.T) {
	pkgs := goList(t, "./...")
	if len(pkgs) < 30 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		from := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if why := importProblem(from, to); why != "" {
				t.Errorf("%s imports %s: %s", from, to, why)
			}
		}
	}
}

// testingImporters are the only packages a release binary may link `testing` through, each a
// third-party package that keeps a test helper in a non-test file:
//   - operator-framework/api's pkg/validation/internal, which the bundle validators use;
//   - containerd's content/local (test_helper.go), which `catalog simulate` links through OLM's
//     resolver package: its step resolver imports operator-registry's bundle unpacker.
var testingImporters = map[string][]string{
	"cmd/csi-olm": {
		"github.com/containerd/containerd/content/local",
		"github.com/operator-framework/api/pkg/validation/internal",
	},
	"cmd/aws-efs-csi-driver-operator": nil,
}

// TestReleaseBinariesDoNotLinkTestCode: neither binary links this module's test code, and
// `testing` only through the third-party package named above.
// apiVersion names a Kubernetes API version package (v1alpha1), which every API group has one
// of: those are imported as <group><version>, as Kubernetes' own are (corev1, appsv1).
var apiVersion = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// TestImportNames keeps each of the module's packages under one name wherever it is imported,
// and keeps two packages of one name out of any one file but for API versions: a reader meets a
// package by one name, and no import needs an alias to tell two apart.
func TestImportNames(t *testing.T) {
	names := map[string]string{}
	for _, p := range goList(t, "./...") {
		names[p.ImportPath] = p.Name
	}
	used := map[string]map[string][]string{} // import path -> local name -> files
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		byName := map[string]string{}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			name, ours := names[imp]
			if !ours {
				continue
			}
			local := name
			if spec.Name != nil {
				local = spec.Name.Name
			}
			if used[imp] == nil {
				used[imp] = map[string][]string{}
			}
			used[imp][local] = append(used[imp][local], rel)
			if other, ok := byName[name]; ok && !apiVersion.MatchString(name) {
				t.Errorf("%s imports %s and %s, both named %s: rename one of them", rel, other, imp, name)
			}
			byName[name] = imp
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 30 {
		t.Fatalf("only %d of the module's packages are imported anywhere: the walk missed files", len(used))
	}
	for imp, locals := range used {
		if len(locals) > 1 {
			t.Errorf("%s is imported under %d names: %v", imp, len(locals), slices.Sorted(maps.Keys(locals)))
		}
	}
}

func TestReleaseBinariesDoNotLinkTestCode(t *testing.T) {
	for main, allowed := range testingImporters {
		t.Run(main, func(t *testing.T) {
			pkgs := goList(t, "-deps", "./"+main)
			var importers []string
			for _, p := range pkgs {
				if strings.HasPrefix(p.ImportPath, module+"/test/") {
					t.Errorf("%s links test package %s", main, p.ImportPath)
				}
				if slices.Contains(p.Imports, "testing") {
					importers = append(importers, p.ImportPath)
				}
			}
			slices.Sort(importers)
			if !slices.Equal(importers, allowed) {
				t.Errorf("%s links package testing through %v, want only %v", main, importers, allowed)
			}
		})
	}
}

// TestKillHookIsNotInReleaseBuilds: the migrate verbs' SIGKILL test hook is compiled only with
// the csiolm_killhook build tag, which the tests' own builds set.
func TestKillHookIsNotInReleaseBuilds(t *testing.T) {
	const hook = "CSI_OLM_MIGRATE_KILL_AFTER"
	for _, tags := range []string{"", "csiolm_killhook"} {
		bin := filepath.Join(t.TempDir(), "csi-olm")
		cmd := exec.Command("go", "build", "-trimpath", "-tags", tags, "-o", bin, "./cmd/csi-olm")
		cmd.Dir = root
		// Built as make builds csi-olm (Makefile: static, -trimpath), not as this test process
		// was (-race, which needs cgo): the packages compiled for the one are the other's.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build -tags %q: %v\n%s", tags, err, out)
		}
		raw, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := bytes.Contains(raw, []byte(hook)), tags != ""; got != want {
			t.Errorf("built with tags %q: the binary contains %s = %v, want %v", tags, hook, got, want)
		}
	}
}

// TestMakeStampsTheBuild: `make cli` records the version and the commit, and `csi-olm version`
// prints both.
func TestMakeStampsTheBuild(t *testing.T) {
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout, nothing to stamp: %v", err)
	}
	bin := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "cli", "BIN="+bin)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make cli: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(bin, "csi-olm"), "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var info struct{ Version, Commit string }
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out)
	}
	if want := strings.TrimSpace(string(head)); info.Commit != want || info.Version == "" || info.Version == "dev" {
		t.Errorf("version = %+v, want commit %s and a version from git describe", info, want)
	}
}

// TestMainsAreThin: a main only wires; the work is in packages that tests can call.
func TestMainsAreThin(t *testing.T) {
	mains, err := filepath.Glob(filepath.Join(root, "cmd", "*", "main.go"))
	if err != nil || len(mains) != 2 {
		t.Fatalf("found mains %v (%v), want the two binaries'", mains, err)
	}
	for _, m := range mains {
		raw, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(raw, []byte("\n")); n >= 100 {
			t.Errorf("%s has %d lines, want under 100", m, n)
		}
	}
}

var (
	// A citation starts the path: "https://…/docs/x.md" of another project is not one.
	citation = regexp.MustCompile("(?:^|[\\s(`\"'\\[])(?:\\.\\./)*docs/([a-z0-9-]+\\.md)(#[a-z0-9-]+)?")
	heading  = regexp.MustCompile(`^#+ +(.+)$`)
)

// anchors returns the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := map[string]bool{}
	inFence := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if m := heading.FindStringSubmatch(line); m != nil && !inFence {
			a := strings.Map(func(r rune) rune {
				switch {
				case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
					return r
				case r == ' ':
					return '-'
				}
				return -1
			}, strings.ToLower(m[1]))
			found["#"+a] = true
		}
	}
	return found
}

// outsideDesign is the design notes the project started from, kept outside the repository;
// spelled in two parts so that this file does not cite it.
const outsideDesign = "DESIGN" + ".md"

// TestCitedDocumentsExist: every docs/<file>.md#<heading> cited anywhere in the repository
// resolves, and nothing cites a design document outside the repository.
func TestCitedDocumentsExist(t *testing.T) {
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	docs := map[string]map[string]bool{}
	cited := 0
	for _, file := range strings.Fields(string(out)) {
		if strings.HasPrefix(file, "catalog/") || strings.HasPrefix(file, "bundle/aws-") || strings.HasPrefix(file, "bundle/manila") {
			continue // generated
		}
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			continue // deleted in the work tree
		}
		if bytes.Contains(raw, []byte(outsideDesign)) {
			t.Errorf("%s cites %s, which is not in the repository: cite docs/architecture.md", file, outsideDesign)
		}
		for _, m := range citation.FindAllStringSubmatch(string(raw), -1) {
			cited++
			doc := m[1]
			if docs[doc] == nil {
				if _, err := os.Stat(filepath.Join(root, "docs", doc)); err != nil {
					t.Errorf("%s cites docs/%s, which does not exist", file, doc)
					docs[doc] = map[string]bool{}
					continue
				}
				docs[doc] = anchors(t, filepath.Join(root, "docs", doc))
			}
			if m[2] != "" && !docs[doc][m[2]] {
				t.Errorf("%s cites docs/%s%s, which has no such heading", file, doc, m[2])
			}
		}
	}
	if cited == 0 {
		t.Error("found no citation of docs/ at all: the scan is broken")
	}
}

// TestShippedMainsBuildTheSameCodeOnEveryPlatform stands in for cross-compiling the release
// binaries in CI, which took six minutes of CPU for the operator on arm64 alone: the platforms
// come from the Makefile (PLATFORMS for the operator, CLI_PLATFORMS for csi-olm), and for each
// one every package the main links must resolve (no import missing there, no package whose
// build constraints leave it empty). This module's packages that hold the same Go files as on the
// machine running the tests are compiled by the tests; the few whose files differ (`csi-olm dev`,
// Linux only) are compiled here for that platform. What else differs by platform is the
// dependencies' code, which their projects build for it. `make release` cross-compiles every
// binary it ships.
func TestShippedMainsBuildTheSameCodeOnEveryPlatform(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for variable, main := range map[string]string{"PLATFORMS": "./cmd/aws-efs-csi-driver-operator", "CLI_PLATFORMS": "./cmd/csi-olm"} {
		m := regexp.MustCompile(`(?m)^` + variable + ` \??:?= (.+)$`).FindSubmatch(makefile)
		if m == nil {
			t.Fatalf("the Makefile sets no %s", variable)
		}
		host := ownFiles(t, goListErrors(t, main, "", ""))
		for _, platform := range strings.Fields(string(m[1])) {
			goos, goarch, ok := strings.Cut(platform, "/")
			if !ok {
				t.Fatalf("%s: platform %q is not GOOS/GOARCH", variable, platform)
			}
			t.Run(strings.TrimPrefix(main, "./cmd/")+"/"+platform, func(t *testing.T) {
				var differ []string
				for p, files := range ownFiles(t, goListErrors(t, main, goos, goarch)) {
					if !slices.Equal(files, host[p]) {
						differ = append(differ, p)
					}
				}
				if len(differ) == 0 {
					return
				}
				slices.Sort(differ)
				cmd := exec.Command("go", append([]string{"build", "-o", os.DevNull}, differ...)...)
				cmd.Dir = root
				cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("this module's packages whose files differ on %s do not build there: %v\n%s", platform, err, out)
				}
				t.Logf("built for %s, whose files differ there: %v", platform, differ)
			})
		}
	}
}

// listed is the part of `go list -e -json` that says what went wrong with a package.
type listed struct {
	pkg
	Error      *struct{ Err string }
	DepsErrors []struct{ Err string }
}

// goListErrors lists main and everything it links for goos/goarch (the host's when empty),
// statically as release builds are, and fails the test with every package's error.
func goListErrors(t *testing.T, main, goos, goarch string) []listed {
	t.Helper()
	env := []string{"CGO_ENABLED=0"}
	if goos != "" {
		env = append(env, "GOOS="+goos, "GOARCH="+goarch)
	}
	pkgs := goListAs[listed](t, env, "-e", "-deps", "-json=ImportPath,GoFiles,Error,DepsErrors", main)
	for _, p := range pkgs {
		if p.Error != nil {
			t.Errorf("%s/%s: %s: %s", goos, goarch, p.ImportPath, p.Error.Err)
		}
		for _, e := range p.DepsErrors {
			t.Errorf("%s/%s: %s: %s", goos, goarch, p.ImportPath, e.Err)
		}
	}
	return pkgs
}

// ownFiles maps each of this module's packages in pkgs to its Go files.
func ownFiles(t *testing.T, pkgs []listed) map[string][]string {
	t.Helper()
	files := map[string][]string{}
	for _, p := range pkgs {
		if p.ImportPath == module || strings.HasPrefix(p.ImportPath, module+"/") {
			files[p.ImportPath] = p.GoFiles
		}
	}
	if len(files) == 0 {
		t.Fatal("go list named no package of this module")
	}
	return files
}
