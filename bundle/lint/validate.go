// Package validation is the `csi-olm bundle validate` verb and the bundle checks behind it.
package lint

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

	"github.com/csi-olm/csi-olm/bundle/registryv1"
	"github.com/csi-olm/csi-olm/internal/exitcode"
)

// Validate checks every bundle found under Paths.
type Validate struct {
	Paths []string
	// Strict fails on warnings that no waiver explains.
	Strict bool
	// Release checks the bundles as a release publishes them (see Options.Release).
	Release bool
	// OLMv1 adds the checks of what OLM v1 can install (see OLMv1).
	OLMv1   bool
	Explain Explainer
	Out     io.Writer
}

// Run validates the bundles and prints the report: every problem of every bundle found under
// every path, in the order of the paths. A path without a bundle is reported and fails the run,
// but does not stop it.
func (v *Validate) Run(ctx context.Context) error {
	var bundles, errs, warnings, explained, empty int
	for _, p := range v.Paths {
		dirs, err := findBundles(p)
		if err != nil {
			empty++
			fmt.Fprintf(v.Out, "FAIL %s\n  %s\n", p, Problem{File: p, Level: Error, Validator: "Load", Message: err.Error()})
			continue
		}
		for _, dir := range dirs {
			if err := ctx.Err(); err != nil {
				return err
			}
			bundles++
			problems := Bundle(dir, Options{Explain: v.Explain, Release: v.Release, OLMv1: v.OLMv1})
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
	}
	summary := fmt.Sprintf("%d errors, %d warnings, %d explained warnings", errs, warnings, explained)
	failure := fmt.Sprintf("%d errors, %d unexplained warnings", errs, warnings)
	if empty > 0 {
		summary += fmt.Sprintf(", %d paths without a bundle", empty)
		failure += fmt.Sprintf(", %d paths without a bundle", empty)
	}
	fmt.Fprintf(v.Out, "%d bundles: %s\n", bundles, summary)
	err := fmt.Errorf("bundle validation failed: %s", failure)
	switch {
	case empty > 0:
		// A path without a bundle is input the verb could not read, not a finding about it.
		return err
	case errs > 0 || (v.Strict && warnings > 0):
		return exitcode.Found(err)
	}
	return nil
}

// bundleMarks are the entries that make a directory a bundle, complete or not: a directory with
// any of them is validated, so a bundle missing a part is reported rather than passed over.
var bundleMarks = []string{registryv1.AnnotationsFile, path.Dir(registryv1.AnnotationsFile), registryv1.ManifestsDir, registryv1.DockerfileFile}

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
		return nil, fmt.Errorf("no bundle under %s: a bundle directory holds %s and %s/", root, registryv1.AnnotationsFile, registryv1.ManifestsDir)
	}
	return dirs, nil
}
