// Package validate is the `csi-olm catalog validate` verb.
package validation

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Validate checks one file-based catalog directory.
type Validate struct {
	Dir string
	// Community is the community catalog directory, for the cross-catalog checks.
	Community string
	// Bundles is the bundle tree that embedded bundle objects must agree with; empty to skip.
	Bundles string
	Out     io.Writer
}

// Run validates the catalog and prints the report.
func (v *Validate) Run(ctx context.Context) error {
	c, problems, err := load(ctx, v.Dir)
	if err != nil {
		return err
	}
	opts := Options{}
	if v.Community != "" {
		community, communityProblems, err := load(ctx, v.Community)
		if err != nil {
			return err
		}
		problems = append(problems, communityProblems...)
		opts.Community = community
	}
	if v.Bundles != "" {
		if _, err := os.Stat(v.Bundles); err != nil {
			return fmt.Errorf("--bundles: %w", err)
		}
		opts.Bundles = &BundleSource{FS: os.DirFS(v.Bundles), Dir: v.Bundles}
	}
	problems = append(problems, Check(c, opts)...)
	errs, warnings := 0, 0
	for _, p := range problems {
		fmt.Fprintln(v.Out, p)
		if p.Level == Error {
			errs++
		} else {
			warnings++
		}
	}
	cfg := c.Config
	fmt.Fprintf(v.Out, "%s: %d packages, %d channels, %d bundles: %d errors, %d warnings\n",
		v.Dir, len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles), errs, warnings)
	if errs > 0 {
		return fmt.Errorf("catalog %s is invalid: %d errors", v.Dir, errs)
	}
	return nil
}

func load(ctx context.Context, dir string) (*Catalog, []Problem, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading catalog: %w", err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a catalog directory", dir)
	}
	c, problems := Load(ctx, os.DirFS(dir), dir)
	return c, problems, nil
}
