// Package validate is the `csi-olm bundle validate` verb.
package validation

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/csi-olm/csi-olm/bundle/build"
)

// Validate checks every bundle found under Paths.
type Validate struct {
	Paths []string
	// Strict fails on warnings that no waiver explains.
	Strict bool
	// Release checks the bundles as a release publishes them (see Options.Release).
	Release bool
	Explain Explainer
	Out     io.Writer
}

// Run validates the bundles and prints the report.
func (v *Validate) Run(ctx context.Context) error {
	var dirs []string
	for _, p := range v.Paths {
		found, err := findBundles(p)
		if err != nil {
			return err
		}
		dirs = append(dirs, found...)
	}
	var errs, warnings, explained int
	for _, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return err
		}
		problems := Bundle(dir, Options{Explain: v.Explain, Release: v.Release})
		sort.SliceStable(problems, func(i, j int) bool { return problems[i].File < problems[j].File })
		e, w, x := Counts(problems)
		errs, warnings, explained = errs+e, warnings+w, explained+x
		status := "ok"
		if e > 0 {
			status = "FAIL"
		}
		fmt.Fprintf(v.Out, "%s %s\n", status, dir)
		for _, p := range problems {
			fmt.Fprintf(v.Out, "  %s\n", p)
		}
	}
	fmt.Fprintf(v.Out, "%d bundles: %d errors, %d warnings, %d explained warnings\n", len(dirs), errs, warnings, explained)
	if errs > 0 || (v.Strict && warnings > 0) {
		return fmt.Errorf("bundle validation failed: %d errors, %d unexplained warnings", errs, warnings)
	}
	return nil
}

// findBundles returns path if it is a bundle directory, else every bundle directory below it.
func findBundles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", path)
	}
	var dirs []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != path && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, build.AnnotationsFile)); err == nil {
			dirs = append(dirs, p)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("searching %s for bundles: %w", path, err)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no bundle under %s: a bundle directory holds %s", path, build.AnnotationsFile)
	}
	return dirs, nil
}
