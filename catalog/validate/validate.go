// Package validate is the `csi-olm catalog validate` verb.
package validate

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/catalog/check"
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

// NewCommand returns the cobra command of the verb.
func NewCommand() *cobra.Command {
	v := &Validate{}
	cmd := &cobra.Command{
		Use:   "validate <dir>",
		Short: "Validate a file-based catalog: opm's rules plus upgrade-graph checks",
		Long: `Applies exactly the rules of ` + "`opm validate`" + ` (declcfg + ConvertToModel, package by package),
then checks what opm does not: every bundle has an upgrade path to its channel head (through
replaces, skips or skipRange), every default channel exists and has a head, every skipRange
parses, every replaces/skips names a real bundle, and deprecations refer to what exists.

--community DIR adds the cross-catalog checks: edges may point into the community catalog, and
for each package both carry, the head of each community channel is older than this catalog's
head, which upgrades every community version directly. --bundles DIR checks that embedded bundle
manifests agree with the bundle directories.

Prints every problem with its package, channel or bundle and file; exits non-zero on errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			v.Dir = args[0]
			v.Out = cmd.OutOrStdout()
			return v.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&v.Community, "community", "", "community catalog directory this catalog's packages upgrade from")
	cmd.Flags().StringVar(&v.Bundles, "bundles", "", "bundle directory tree the embedded bundle objects must agree with")
	return cmd
}

// Run validates the catalog and prints the report.
func (v *Validate) Run(ctx context.Context) error {
	c, problems, err := load(ctx, v.Dir)
	if err != nil {
		return err
	}
	opts := check.Options{}
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
		opts.Bundles = &check.BundleSource{FS: os.DirFS(v.Bundles), Dir: v.Bundles}
	}
	problems = append(problems, check.Validate(c, opts)...)
	errs, warnings := 0, 0
	for _, p := range problems {
		fmt.Fprintln(v.Out, p)
		if p.Level == check.Error {
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

func load(ctx context.Context, dir string) (*check.Catalog, []check.Problem, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("reading catalog: %w", err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a catalog directory", dir)
	}
	c, problems := check.Load(ctx, os.DirFS(dir), dir)
	return c, problems, nil
}
