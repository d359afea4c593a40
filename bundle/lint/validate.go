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
	"github.com/csi-olm/csi-olm/internal/output"
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
	// Output is text, json or yaml (a Report).
	Output string
	Out    io.Writer
}

// Report is a validation as data, in operator-sdk's `bundle validate -o json-alpha1` shape
// (passed, and outputs of type and message), with each bundle's problems beside it.
type Report struct {
	Passed  bool           `json:"passed"`
	Outputs []Output       `json:"outputs"`
	Bundles []BundleReport `json:"bundles"`
}

// Output is a problem as operator-sdk reports it: error or warning, and the message with the file
// and validator.
type Output struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// BundleReport is one bundle directory's validation, or one path without a bundle.
type BundleReport struct {
	Bundle   string    `json:"bundle"`
	Passed   bool      `json:"passed"`
	Problems []Problem `json:"problems"`
}

// Run validates the bundles and prints the report: every problem of every bundle found under
// every path, in the order of the paths. A path without a bundle is reported and fails the run,
// but does not stop it.
func (v *Validate) Run(ctx context.Context) error {
	if err := output.Check(v.Output); err != nil {
		return err
	}
	text := !output.Data(v.Output)
	report := &Report{Outputs: []Output{}, Bundles: []BundleReport{}}
	add := func(b BundleReport) {
		report.Bundles = append(report.Bundles, b)
		for _, p := range b.Problems {
			if p.Explained == "" {
				report.Outputs = append(report.Outputs, Output{Type: string(p.Level), Message: fmt.Sprintf("%s: [%s] %s", p.File, p.Validator, p.Message)})
			}
		}
		if !text {
			return
		}
		status := "ok"
		if !b.Passed {
			status = "FAIL"
		}
		fmt.Fprintf(v.Out, "%s %s\n", status, b.Bundle)
		for _, p := range b.Problems {
			fmt.Fprintf(v.Out, "  %s\n", p)
		}
	}
	var bundles, errs, warnings, explained, empty int
	for _, p := range v.Paths {
		dirs, err := findBundles(p)
		if err != nil {
			empty++
			add(BundleReport{Bundle: p, Problems: []Problem{{File: p, Level: Error, Validator: "Load", Message: err.Error()}}})
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
			if problems == nil {
				problems = []Problem{}
			}
			add(BundleReport{Bundle: dir, Passed: e == 0, Problems: problems})
		}
	}
	summary := fmt.Sprintf("%d errors, %d warnings, %d explained warnings", errs, warnings, explained)
	failure := fmt.Sprintf("%d errors, %d unexplained warnings", errs, warnings)
	if empty > 0 {
		summary += fmt.Sprintf(", %d paths without a bundle", empty)
		failure += fmt.Sprintf(", %d paths without a bundle", empty)
	}
	err := fmt.Errorf("bundle validation failed: %s", failure)
	switch {
	case empty > 0:
		// A path without a bundle is input the verb could not read, not a finding about it.
	case errs > 0 || (v.Strict && warnings > 0):
		err = exitcode.Found(err)
	default:
		err = nil
	}
	report.Passed = err == nil
	if text {
		fmt.Fprintf(v.Out, "%d bundles: %s\n", bundles, summary)
	} else if werr := output.Write(v.Out, v.Output, report); werr != nil {
		return werr
	}
	return err
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
