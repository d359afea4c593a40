// Package predict is what the catalog verbs share about predicting an OLM: the catalogs it reads,
// the cluster beside them, and how a user's start ends. Each OLM has its own package beneath:
// olmv0 runs OLM v0's resolver for Subscriptions, olmv1 restates operator-controller's rule for
// ClusterExtensions. Both implement Judge, which is all `catalog diff` knows of them.
package predict

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	registryclient "github.com/operator-framework/operator-registry/pkg/client"

	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/validation"
)

// Result is how a start ends.
type Result string

const (
	// AtHead: the OLM settles on the channel head (OLM v1: the latest bundle).
	AtHead Result = "head"
	// Stranded: the OLM keeps a bundle short of the head and reports nothing wrong.
	Stranded Result = "stranded"
	// Unresolvable: the OLM reports that it cannot resolve (OLM v0: ResolutionFailed on the
	// Subscription; OLM v1: Progressing, Retrying on the ClusterExtension).
	Unresolvable Result = "unresolvable"
	// Loops: the catalogs' edges lead the OLM back to a bundle it installed before, so it would
	// go round that circle for good. opm accepts such catalogs when the circle is made of skips
	// and skipRanges rather than replaces.
	Loops Result = "loops"
)

// Circle writes a loop of bundles round to its first again: "a -> b -> a".
func Circle(loop []string) string {
	return strings.Join(append(slices.Clone(loop), loop[0]), " -> ")
}

// Bundle is a bundle and the catalog it comes from.
type Bundle struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Catalog string `json:"catalog"`
}

// Outcome is where a start ends, and why not at the head.
type Outcome struct {
	Result     Result
	End        string
	EndVersion *semver.Version
	Why        string
	// Head is where a start that ends well ends: the channel head (OLM v1: the latest bundle).
	Head        string
	HeadVersion *semver.Version
}

// Wording names an OLM in reports.
type Wording struct {
	// OLM is who decides, Users who are moved, Head what they are moved to.
	OLM, Users, Head string
	// V1 says the OLM reads no default channel and takes every channel when none is named.
	V1 bool
}

// Judge says where a user of one version of a catalog goes in that version and in the next.
type Judge interface {
	Wording() Wording
	// Outcomes installs bundle, of the old version's package pkg, subscribed to channel ("" for
	// none, OLM v1 only), and says where it ends in the old version and in the new; ok is false
	// for a start that cannot exist.
	Outcomes(ctx context.Context, pkg, channel, bundle string) (before, after Outcome, ok bool, err error)
}

// Catalog is a file-based catalog to predict against, under Name (the CatalogSource's or
// ClusterCatalog's name) with Priority (its spec.priority).
type Catalog struct {
	Name     string
	Dir      string
	FS       fs.FS
	Priority int
	// Registry, when set, is a running registry serving the catalog (a CatalogSource's): the
	// catalog is read from it, and FS is not read.
	Registry registryclient.Interface
}

// Loaded is a catalog as the loader read it, under its name.
func Loaded(c *load.Catalog) Catalog { return Catalog{Name: c.Name, Dir: c.Arg, FS: c.FS} }

// Read reads the catalog from its registry, or from its files refusing one with load problems,
// every one of them (*BrokenCatalogError).
func (c Catalog) Read(ctx context.Context) (*declcfg.DeclarativeConfig, error) {
	if c.Registry != nil {
		cfg, err := load.FromRegistry(ctx, c.Registry)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", c.Dir, err)
		}
		return cfg, nil
	}
	v, problems := validation.Load(ctx, c.FS, c.Dir)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loading %s: %w", c.Dir, err)
	}
	if len(problems) > 0 {
		return nil, &BrokenCatalogError{Dir: c.Dir, Problems: problems}
	}
	return v.Config, nil
}

// BrokenCatalogError is a catalog that does not load, with every problem.
type BrokenCatalogError struct {
	Dir      string
	Problems []validation.Problem
}

func (e *BrokenCatalogError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("cannot simulate %s:\n%s", e.Dir, strings.Join(lines, "\n"))
}
