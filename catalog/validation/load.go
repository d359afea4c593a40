// Package check validates file-based catalogs: exactly the rules of `opm validate`, through
// operator-registry's declcfg and model packages, plus upgrade-graph checks opm does not do.
// Every problem names its package, channel or bundle and the file it comes from.
package validation

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// Level is the severity of a problem.
type Level string

const (
	// Error makes the catalog unusable or its upgrades wrong.
	Error Level = "error"
	// Warning is something to look at that may be right.
	Warning Level = "warning"
)

// Problem is one finding about a catalog.
type Problem struct {
	File  string `json:"file,omitempty"`
	Level Level  `json:"level"`
	// Rule is the stable name of the rule that found it (Rules), which settings turn off or up
	// and down.
	Rule    string `json:"rule"`
	Package string `json:"package,omitempty"`
	Channel string `json:"channel,omitempty"`
	Bundle  string `json:"bundle,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	var where []string
	for _, kv := range [][2]string{{"package", p.Package}, {"channel", p.Channel}, {"bundle", p.Bundle}} {
		if kv[1] != "" {
			where = append(where, kv[0]+" "+kv[1])
		}
	}
	loc := ""
	if len(where) > 0 {
		loc = strings.Join(where, ", ") + ": "
	}
	return fmt.Sprintf("%s: %s: [%s] %s%s", p.File, p.Level, p.Rule, loc, p.Message)
}

// Catalog is a loaded file-based catalog and where each of its objects came from.
type Catalog struct {
	// Dir names the catalog in problems; file paths are relative to it.
	Dir    string
	Config *declcfg.DeclarativeConfig
	files  map[objectKey]string
}

type objectKey struct{ schema, pkg, name string }

// file returns the file an object came from, falling back to the package's file, then to any
// file of the package, then to the catalog.
func (c *Catalog) file(schema, pkg, name string) string {
	for _, k := range []objectKey{{schema, pkg, name}, {declcfg.SchemaPackage, pkg, pkg}} {
		if f, ok := c.files[k]; ok {
			return c.Dir + "/" + f
		}
	}
	first := ""
	for k, f := range c.files {
		if k.pkg == pkg && (first == "" || f < first) {
			first = f
		}
	}
	if first != "" {
		return c.Dir + "/" + first
	}
	return c.Dir
}

// metaKey identifies a meta: packages are keyed by their own name.
func metaKey(m *declcfg.Meta) objectKey {
	if m.Schema == declcfg.SchemaPackage {
		return objectKey{m.Schema, m.Name, m.Name}
	}
	return objectKey{m.Schema, m.Package, m.Name}
}

// Load reads a catalog from fsys the way opm does (declcfg.WalkMetasFS), recording each
// object's file. Files that do not parse and objects that do not decode are reported, all of
// them, and left out. Each object is decoded as soon as it is read, so raw and decoded copies
// of the catalog never sit in memory together.
func Load(ctx context.Context, fsys fs.FS, dir string) (*Catalog, []Problem) {
	c := &Catalog{Dir: dir, Config: &declcfg.DeclarativeConfig{}, files: map[objectKey]string{}}
	var (
		mu       sync.Mutex
		problems []Problem
	)
	err := declcfg.WalkMetasFS(ctx, fsys, func(path string, meta *declcfg.Meta, err error) error {
		if err != nil {
			mu.Lock()
			problems = append(problems, Problem{File: dir + "/" + path, Level: Error, Rule: RuleLoad, Message: fmt.Sprintf("not valid YAML or JSON: %v", err)})
			mu.Unlock()
			return nil
		}
		obj, err := declcfg.LoadSlice([]*declcfg.Meta{meta})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			problems = append(problems, Problem{
				File: dir + "/" + path, Level: Error, Rule: RuleLoad, Package: meta.Package,
				Message: fmt.Sprintf("%s %q: %v", orSchema(meta.Schema), meta.Name, err),
			})
			return nil
		}
		c.Config.Merge(obj)
		key := metaKey(meta)
		if prior, ok := c.files[key]; ok && prior != path && slices.Contains(olmSchemas, meta.Schema) {
			problems = append(problems, Problem{
				File: dir + "/" + path, Level: Error, Rule: RuleLoad, Package: meta.Package,
				Message: fmt.Sprintf("%s %q is also in %s: OLM refuses a catalog that declares it twice", meta.Schema, meta.Name, dir+"/"+prior),
			})
		}
		c.files[key] = path
		return nil
	})
	if err != nil {
		problems = append(problems, Problem{File: dir, Level: Error, Rule: RuleLoad, Message: err.Error()})
	}
	problems = append(problems, emptyDirectories(fsys, dir)...)
	sortConfig(c.Config)
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].File < problems[j].File })
	return c, problems
}

// sortConfig orders what concurrent loading found in any order, for stable reports.
func sortConfig(cfg *declcfg.DeclarativeConfig) {
	sort.SliceStable(cfg.Packages, func(i, j int) bool { return cfg.Packages[i].Name < cfg.Packages[j].Name })
	sort.SliceStable(cfg.Channels, func(i, j int) bool {
		a, b := cfg.Channels[i], cfg.Channels[j]
		return a.Package < b.Package || (a.Package == b.Package && a.Name < b.Name)
	})
	sort.SliceStable(cfg.Bundles, func(i, j int) bool {
		a, b := cfg.Bundles[i], cfg.Bundles[j]
		return a.Package < b.Package || (a.Package == b.Package && a.Name < b.Name)
	})
	sort.SliceStable(cfg.Deprecations, func(i, j int) bool { return cfg.Deprecations[i].Package < cfg.Deprecations[j].Package })
}

func orSchema(s string) string {
	if s == "" {
		return "object without schema"
	}
	return s
}

// FromConfig wraps a catalog held in memory, whose files are laid out as declcfg.WriteFS writes
// them (<package>/catalog<ext>).
func FromConfig(cfg *declcfg.DeclarativeConfig, dir, ext string) *Catalog {
	c := &Catalog{Dir: dir, Config: cfg, files: map[objectKey]string{}}
	for _, p := range cfg.Packages {
		c.files[objectKey{declcfg.SchemaPackage, p.Name, p.Name}] = p.Name + "/catalog" + ext
	}
	return c
}

// emptyDirectories finds the catalog's top directories (a package's, by convention) that hold
// no file: Konflux's validate-fbc fails a catalog with one, which is likely a package whose
// files went missing.
func emptyDirectories(fsys fs.FS, dir string) []Problem {
	top, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil // the walk reported it
	}
	var problems []Problem
	for _, d := range top {
		if !d.IsDir() {
			continue
		}
		empty := true
		_ = fs.WalkDir(fsys, d.Name(), func(_ string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				empty = false
				return fs.SkipAll
			}
			return nil
		})
		if empty {
			problems = append(problems, Problem{File: dir + "/" + d.Name(), Level: Warning, Rule: RuleEmptyDirectory,
				Message: "the directory holds no file: a package whose files went missing? (Konflux's validate-fbc fails a catalog with an empty directory)"})
		}
	}
	return problems
}
