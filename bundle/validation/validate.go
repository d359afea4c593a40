// Package validation is the `csi-olm bundle validate` verb and the bundle checks behind it.
package validation

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
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

// bundleMarks are the entries that make a directory a bundle, complete or not: a directory with
// any of them is validated, so a bundle missing a part is reported rather than passed over.
var bundleMarks = []string{build.AnnotationsFile, path.Dir(build.AnnotationsFile), build.ManifestsDir, build.DockerfileFile}

// findBundles returns path if it is a bundle directory, else every bundle directory below it.
func findBundles(root string) ([]string, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	var dirs []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		for _, mark := range bundleMarks {
			if _, err := os.Stat(filepath.Join(p, mark)); err == nil {
				dirs = append(dirs, p)
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("searching %s for bundles: %w", root, err)
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("no bundle under %s: a bundle directory holds %s and %s/", root, build.AnnotationsFile, build.ManifestsDir)
	}
	return dirs, nil
}
