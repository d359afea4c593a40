package predict

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/load"
)

// Environment is what a cluster has beside the catalog under test, which OLM resolves
// dependencies against: more CatalogSources, by priority, and operators already installed.
type Environment struct {
	// Catalogs are further catalogs, each a directory or a catalog image, optionally followed by
	// ",priority=N" (the CatalogSource's spec.priority; 0 by default).
	Catalogs []string
	// Packages are installed operators given as PACKAGE@VERSION: the bundle of that package and
	// version in a served catalog, as installed, or else an operator with only that package.
	Packages []string
	// APIs are APIs an installed operator provides, given as GROUP/VERSION/KIND.
	APIs []string
}

// Cluster is an Environment made ready: its catalogs opened and named apart from the verb's,
// its operators parsed.
type Cluster struct {
	Catalogs []Catalog
	Packages []PackageVersion
	APIs     []property.GVK
	closers  []func()
}

// PackageVersion is an installed operator's package and version.
type PackageVersion struct {
	Name    string
	Version semver.Version
}

// Open opens the environment's catalogs, each named apart from the others and from taken, the
// names of the verb's catalogs, and parses its operators: every malformed one is reported.
func (e Environment) Open(ctx context.Context, taken ...string) (*Cluster, error) {
	o := &Cluster{}
	names := map[string]bool{}
	for _, name := range taken {
		names[name] = true
	}
	var problems []string
	for _, p := range e.Packages {
		name, v, ok := strings.Cut(p, "@")
		version, err := semver.Parse(v)
		if !ok || name == "" || err != nil {
			problems = append(problems, fmt.Sprintf("installed operator %q is not PACKAGE@VERSION with a semver version", p))
			continue
		}
		o.Packages = append(o.Packages, PackageVersion{name, version})
	}
	for _, a := range e.APIs {
		parts := strings.Split(a, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			problems = append(problems, fmt.Sprintf("installed API %q is not GROUP/VERSION/KIND", a))
			continue
		}
		o.APIs = append(o.APIs, property.GVK{Group: parts[0], Version: parts[1], Kind: parts[2]})
	}
	type spec struct {
		arg      string
		priority int
	}
	var specs []spec
	for _, c := range e.Catalogs {
		arg, opt, hasOpt := strings.Cut(c, ",")
		sp := spec{arg: arg}
		if hasOpt {
			v, ok := strings.CutPrefix(opt, "priority=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				problems = append(problems, fmt.Sprintf("catalog %q: %q is not priority=N", c, opt))
				continue
			}
			sp.priority = n
		}
		specs = append(specs, sp)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the cluster's environment is malformed:\n  %s", strings.Join(problems, "\n  "))
	}
	for _, sp := range specs {
		l, err := load.Open(ctx, sp.arg)
		if err != nil {
			o.Close()
			return nil, fmt.Errorf("reading a catalog that provides dependencies: %w", err)
		}
		o.closers = append(o.closers, l.Close)
		c := Loaded(l)
		for i := 2; names[c.Name]; i++ {
			c.Name = fmt.Sprintf("%s-%d", l.Name, i)
		}
		names[c.Name] = true
		c.Priority = sp.priority
		o.Catalogs = append(o.Catalogs, c)
	}
	return o, nil
}

// Close removes what opening the environment's catalog images unpacked.
func (c *Cluster) Close() {
	for _, close := range c.closers {
		close()
	}
}
