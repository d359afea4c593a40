// Package validation is the `csi-olm catalog validate` verb and the catalog checks behind it.
package validation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"runtime/debug"
	"slices"

	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/option"
	"github.com/csi-olm/csi-olm/internal/output"
)

// Validate checks a file-based catalog directory, or each catalog of a tree of per-minor
// catalogs (catalog/tree) against the community catalog of the same minor.
type Validate struct {
	Dir string
	// Community is the community catalog directory, or tree, for the cross-catalog checks.
	Community string
	// Bundles is the bundle tree that embedded bundle objects must agree with; empty to skip.
	Bundles string
	// Rules are NAME=SETTING items (ParseSettings): a rule turned off, on, or its problems made
	// warnings or errors.
	Rules []string
	// AllowedRegistries are the prefixes bundle images must start with (RuleBundleImageRegistry).
	AllowedRegistries []string
	// Output is text (each problem, then a summary per catalog), json or yaml (a Report).
	Output string
	Out    io.Writer
}

// Report is a validation as data: `opm validate -o json`'s shape (passed, and error.message
// when not), and each catalog's counts and problems.
type Report struct {
	Passed   bool            `json:"passed"`
	Error    *ReportError    `json:"error,omitempty"`
	Catalogs []CatalogReport `json:"catalogs"`
}

// ReportError is why the validation did not pass.
type ReportError struct {
	Message string `json:"message"`
}

// CatalogReport is one catalog's validation.
type CatalogReport struct {
	Catalog  string    `json:"catalog"`
	Packages int       `json:"packages"`
	Channels int       `json:"channels"`
	Bundles  int       `json:"bundles"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
	Problems []Problem `json:"problems"`
}

// Run validates the catalog, or each of the tree's, and prints the report.
func (v *Validate) Run(ctx context.Context) error {
	if err := output.Check(v.Output); err != nil {
		return err
	}
	// The whole catalog is live until the checks end and little garbage outlives a package's
	// checks, so the heap need not grow as far past the live data as Go's default lets it. On
	// a catalog of OperatorHub's size 75 lowers the peak RSS by 3 % at no cost in time that a
	// run can tell; 50 saves three times that but costs a small catalog 13 % more time
	// (BENCHMARKS.md).
	defer debug.SetGCPercent(debug.SetGCPercent(75))
	settings, err := ParseSettings(v.Rules)
	if err != nil {
		return &option.Error{Field: "Rules", Err: err}
	}
	opts := Options{Settings: settings, AllowedRegistries: v.AllowedRegistries}
	if v.Bundles != "" {
		if _, err := os.Stat(v.Bundles); err != nil {
			return &option.Error{Field: "Bundles", Err: err}
		}
		opts.Bundles = &BundleSource{FS: os.DirFS(v.Bundles), Dir: v.Bundles}
	}
	catalogs, err := tree.Catalogs(v.Dir, v.Community)
	if err != nil {
		return err
	}
	report := &Report{Catalogs: []CatalogReport{}}
	var errs []error
	for _, c := range catalogs {
		r, err := v.one(ctx, c, opts)
		if r != nil {
			report.Catalogs = append(report.Catalogs, *r)
			if !output.Data(v.Output) {
				printText(v.Out, r)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	err = errors.Join(errs...)
	report.Passed = err == nil
	if err != nil {
		report.Error = &ReportError{Message: err.Error()}
	}
	if output.Data(v.Output) {
		if werr := output.Write(v.Out, v.Output, report); werr != nil {
			return werr
		}
	}
	return err
}

func printText(out io.Writer, r *CatalogReport) {
	for _, p := range r.Problems {
		fmt.Fprintln(out, p)
	}
	fmt.Fprintf(out, "%s: %d packages, %d channels, %d bundles: %d errors, %d warnings\n",
		r.Catalog, r.Packages, r.Channels, r.Bundles, r.Errors, r.Warnings)
}

// one validates one catalog; a minor's, each bundle must run on a cluster at that minor. Its
// report is nil when the catalog could not be read.
func (v *Validate) one(ctx context.Context, tc tree.Catalog, opts Options) (*CatalogReport, error) {
	dir := tc.Dir
	c, problems, err := readCatalog(ctx, dir)
	if err != nil {
		return nil, err
	}
	if tc.Community != "" {
		community, communityProblems, err := readCatalog(ctx, tc.Community)
		if err != nil {
			return nil, err
		}
		problems = append(problems, communityProblems...)
		opts.Community = community
	}
	opts.Minor = tc.Minor
	// Loading finds problems of rules the settings may turn off or move too.
	problems = append(applySettings(problems, opts.Settings), Check(c, opts)...)
	cfg := c.Config
	r := &CatalogReport{Catalog: dir, Packages: len(cfg.Packages), Channels: len(cfg.Channels), Bundles: len(cfg.Bundles), Problems: problems}
	if r.Problems == nil {
		r.Problems = []Problem{}
	}
	for _, p := range problems {
		if p.Level == Error {
			r.Errors++
		} else {
			r.Warnings++
		}
	}
	if r.Errors > 0 {
		return r, exitcode.Found(fmt.Errorf("catalog %s is invalid: %d errors", dir, r.Errors))
	}
	return r, nil
}

// readCatalog loads a catalog directory, or a catalog image (load.Open) when no such directory
// exists.
func readCatalog(ctx context.Context, dir string) (*Catalog, []Problem, error) {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		img, err := load.Open(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		defer img.Close()
		c, problems := Load(ctx, img.FS, dir)
		return c, problems, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading catalog: %w", err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a catalog directory", dir)
	}
	// Through os.Root, a symlink that leads out of the catalog is refused, not followed: opm
	// follows it, and a catalog image built from the tree would lack the file.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading catalog: %w", err)
	}
	defer root.Close()
	broken, err := brokenLinks(root)
	if err != nil {
		return nil, nil, fmt.Errorf("reading catalog %s: %w", dir, err)
	}
	var problems []Problem
	for _, name := range slices.Sorted(maps.Keys(broken)) {
		problems = append(problems, Problem{File: dir + "/" + name, Level: Error, Rule: RuleLoad, Message: broken[name]})
	}
	c, loadProblems := Load(ctx, hiding{root.FS(), broken}, dir)
	return c, append(problems, loadProblems...), nil
}

// brokenLinks finds the symlinks of the tree that lead out of it or nowhere, and says why each
// is refused.
func brokenLinks(root *os.Root) (map[string]string, error) {
	broken := map[string]string{}
	err := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		_, err = root.Stat(name)
		target, _ := root.Readlink(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			broken[name] = fmt.Sprintf("a symlink to %s, which does not exist", target)
		case err != nil:
			broken[name] = fmt.Sprintf("a symlink to %s, outside the catalog: refused (%v); opm would follow it, but an image built from the directory would not have it", target, errors.Unwrap(err))
		}
		return nil
	})
	return broken, err
}

// hiding is a file system without some of its files.
type hiding struct {
	fs.FS
	hidden map[string]string
}

func (h hiding) Open(name string) (fs.File, error) {
	if _, ok := h.hidden[name]; ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return h.FS.Open(name)
}

func (h hiding) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(h.FS, name)
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool {
		_, ok := h.hidden[path.Join(name, e.Name())]
		return ok
	}), err
}
