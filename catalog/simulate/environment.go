package simulate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/cache"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
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

// Simulator serves the verb's catalogs and the environment's together, and reads the
// environment's installed operators from them. With a scope, the catalogs serve the packages it
// picks, the installed operators' and what those reach (NewScoped). close stops the simulator
// and removes what opening the environment's catalog images unpacked.
func (e Environment) Simulator(ctx context.Context, scope Scope, verbs ...Catalog) (sim *Simulator, existing []Existing, close func(), err error) {
	env, err := e.open(ctx, verbs)
	if err != nil {
		return nil, nil, nil, err
	}
	if scope != nil {
		picked := scope
		scope = func(catalogs map[string]*index.Catalog) []string {
			roots := picked(catalogs)
			for _, p := range env.packages {
				roots = append(roots, p.name)
			}
			return roots
		}
	}
	if sim, err = NewScoped(ctx, scope, env.catalogs...); err != nil {
		env.close()
		return nil, nil, nil, err
	}
	close = func() {
		sim.Close()
		env.close()
	}
	if existing, err = env.existing(sim); err != nil {
		close()
		return nil, nil, nil, err
	}
	return sim, existing, close, nil
}

// opened is an Environment made ready: its catalogs opened, its operators parsed.
type opened struct {
	catalogs []Catalog
	closers  []func()
	packages []packageVersion
	apis     []property.GVK
}

type packageVersion struct {
	name    string
	version semver.Version
}

// open opens the environment's catalogs beside the ones the verb opened, naming each apart, and
// parses its operators: every malformed one is reported.
func (e Environment) open(ctx context.Context, verbs []Catalog) (*opened, error) {
	o := &opened{}
	names := map[string]bool{}
	for _, c := range verbs {
		o.catalogs = append(o.catalogs, c)
		names[c.Name] = true
	}
	var problems []string
	for _, p := range e.Packages {
		name, v, ok := strings.Cut(p, "@")
		version, err := semver.Parse(v)
		if !ok || name == "" || err != nil {
			problems = append(problems, fmt.Sprintf("installed operator %q is not PACKAGE@VERSION with a semver version", p))
			continue
		}
		o.packages = append(o.packages, packageVersion{name, version})
	}
	for _, a := range e.APIs {
		parts := strings.Split(a, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			problems = append(problems, fmt.Sprintf("installed API %q is not GROUP/VERSION/KIND", a))
			continue
		}
		o.apis = append(o.apis, property.GVK{Group: parts[0], Version: parts[1], Kind: parts[2]})
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
			o.close()
			return nil, fmt.Errorf("reading a catalog that provides dependencies: %w", err)
		}
		o.closers = append(o.closers, l.Close)
		c := Loaded(l)
		for i := 2; names[c.Name]; i++ {
			c.Name = fmt.Sprintf("%s-%d", l.Name, i)
		}
		names[c.Name] = true
		c.Priority = sp.priority
		o.catalogs = append(o.catalogs, c)
	}
	return o, nil
}

func (o *opened) close() {
	for _, c := range o.closers {
		c()
	}
}

// existing is the environment's installed operators. A package@version that a served catalog
// carries is that bundle as installed, with the APIs it provides and requires; any other is an
// operator with only that package.
func (o *opened) existing(sim *Simulator) ([]Existing, error) {
	var out []Existing
	for _, p := range o.packages {
		found := false
		for _, c := range o.catalogs {
			entries, err := sim.resolver.Find(c.Name, p.name, cache.PkgPredicate(p.name), cache.VersionInRangePredicate(semverExactly(p.version), p.version.String()))
			if err != nil {
				return nil, err
			}
			if len(entries) > 0 {
				e := entries[0]
				out = append(out, Existing{Operator: olmresolver.Operator{CSV: e.Name, Version: *e.Version, Properties: e.Properties}, From: c.Name})
				found = true
				break
			}
		}
		if !found {
			prop := property.MustBuildPackage(p.name, p.version.String())
			out = append(out, Existing{
				Operator: olmresolver.Operator{CSV: p.name + ".v" + p.version.String(), Version: p.version, Properties: []*api.Property{{Type: prop.Type, Value: string(prop.Value)}}},
				From:     "given",
			})
		}
	}
	for _, g := range o.apis {
		prop := property.MustBuildGVK(g.Group, g.Version, g.Kind)
		out = append(out, Existing{
			Operator: olmresolver.Operator{
				CSV:        strings.ToLower(fmt.Sprintf("provides-%s.%s.%s", g.Kind, g.Version, g.Group)),
				Properties: []*api.Property{{Type: prop.Type, Value: string(prop.Value)}},
			},
			From: "given",
		})
	}
	return out, nil
}

func semverExactly(v semver.Version) semver.Range {
	return func(other semver.Version) bool { return other.Equals(v) }
}
