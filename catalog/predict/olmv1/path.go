package olmv1

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/csi-olm/csi-olm/catalog/graph"
	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// How a Step's bundle was chosen, beside the upgrade.Kind of an edge.
const (
	// EdgeInstall: nothing was installed.
	EdgeInstall = "install"
	// EdgeSameVersion: the bundle has the installed bundle's version and release, under another
	// name, and no edge from it.
	EdgeSameVersion = "same version"
	// EdgeSelfCertified: the policy ignores edges.
	EdgeSelfCertified = "SelfCertified"
)

// Path is what operator-controller does for a ClusterExtension from a start: each bundle it
// rolls out, one reconcile after the other, until it resolves to what is installed.
type Path struct {
	Catalogs []CatalogRef            `json:"catalogs"`
	Package  string                  `json:"package"`
	Channels []string                `json:"channels,omitempty"`
	Version  string                  `json:"version,omitempty"`
	Policy   UpgradeConstraintPolicy `json:"upgradeConstraintPolicy"`
	// Start is the installed bundle and the catalog it came from; nil for a new
	// ClusterExtension.
	Start *predict.Bundle `json:"start,omitempty"`
	Steps []Step          `json:"steps"`
	// End is the bundle operator-controller settles on, "" when it installs nothing.
	End        string `json:"end,omitempty"`
	EndVersion string `json:"endVersion,omitempty"`
	// Latest is what a new ClusterExtension with the same spec installs, v1's channel head;
	// LatestError says why it installs nothing.
	Latest        string         `json:"latest,omitempty"`
	LatestVersion string         `json:"latestVersion,omitempty"`
	LatestError   string         `json:"latestError,omitempty"`
	Result        predict.Result `json:"result"`
	// Stranded says why operator-controller stops short of Latest without an error.
	Stranded string `json:"stranded,omitempty"`
	// Loop is the circle operator-controller would go round, each bundle once, when Result is
	// Loops.
	Loop []string `json:"loop,omitempty"`
	// Progressing is operator-controller's error when it cannot resolve: the message of the
	// ClusterExtension's Progressing condition (reason Retrying), with End still installed.
	Progressing string `json:"progressing,omitempty"`
	// Refused is the API server's refusal of a ClusterExtension for the package, whose name is
	// not one a ClusterExtension may name.
	Refused string `json:"refused,omitempty"`

	endVersion *semver.Version
}

// Why says why the path does not end at Latest; "" when it does.
func (p *Path) Why() string {
	switch p.Result {
	case predict.Unresolvable:
		if p.Refused != "" {
			return p.Refused
		}
		return "operator-controller cannot resolve the ClusterExtension (Progressing, Retrying): " + p.Progressing
	case predict.Stranded:
		return p.Stranded
	case predict.Loops:
		return fmt.Sprintf("operator-controller would roll out in a circle, %s, and never settle: the catalogs' upgrade edges loop",
			predict.Circle(p.Loop))
	}
	return ""
}

// EndSemver is End's version, nil when nothing is installed.
func (p *Path) EndSemver() *semver.Version { return p.endVersion }

// LatestSemver is Latest's version, nil when a new ClusterExtension installs nothing.
func (p *Path) LatestSemver() *semver.Version {
	if v, err := semver.Parse(p.LatestVersion); err == nil {
		return &v
	}
	return nil
}

// Step is one bundle operator-controller rolls out.
type Step struct {
	From    string `json:"from,omitempty"`
	To      string `json:"to"`
	Version string `json:"version"`
	Catalog string `json:"catalog"`
	// Edge is how To was chosen: an upgrade.Kind (the field of To's channel entry that names
	// From or contains its version), EdgeSameVersion, EdgeSelfCertified or EdgeInstall; Edges every
	// such field, Channel the first channel, by name, declaring it.
	Edge      string   `json:"edge"`
	Edges     []string `json:"edges,omitempty"`
	Channel   string   `json:"channel,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
	// Passed are the other candidates, and why operator-controller did not choose them.
	Passed []Passed `json:"passed,omitempty"`
	// Deprecations are the messages of the ClusterExtension's Deprecated condition once To is
	// installed.
	Deprecations []string `json:"deprecations,omitempty"`
}

// Passed is a candidate operator-controller did not choose.
type Passed struct {
	Bundle  string `json:"bundle"`
	Version string `json:"version"`
	Catalog string `json:"catalog"`
	Why     string `json:"why"`
}

// Walk predicts every reconcile of a ClusterExtension from req: Resolve, the chosen bundle
// installed, again, until operator-controller resolves to what is installed or fails.
// installedFrom names the catalog req.Installed came from, for the report. An error is a spec
// the API server refuses (*SpecError) or a cancelled context; operator-controller failing to
// resolve is a path whose Result is Unresolvable, and a circle of upgrades one whose Result is
// Loops.
func (r *Resolver) Walk(ctx context.Context, req Request, installedFrom string) (*Path, error) {
	policy := req.Policy
	if policy == "" {
		policy = CatalogProvided
	}
	path := &Path{Catalogs: r.Catalogs(), Package: req.Package, Channels: req.Channels, Version: req.Version, Policy: policy}
	fresh := req
	fresh.Installed = nil
	latest, err := r.resolve(fresh)
	if err != nil {
		return nil, err
	}
	if latest.err != nil {
		path.LatestError = latest.err.Message
	} else {
		c := latest.choice()
		path.Latest, path.LatestVersion = c.Name, c.Version
	}
	installed := req.Installed
	// seen numbers the bundles rolled out, in order: one rolled out again closes a circle.
	seen := map[Installed]int{}
	var rolled []string
	if installed != nil {
		path.Start = &predict.Bundle{Name: installed.Name, Version: installed.Version, Catalog: installedFrom}
		seen[*installed] = 0
		rolled = append(rolled, installed.Name)
	}
	var last *resolution
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q := req
		q.Installed = installed
		res, err := r.resolve(q)
		if err != nil {
			return nil, err
		}
		last = res
		if res.err != nil {
			path.Result, path.Progressing = predict.Unresolvable, res.err.Message
			break
		}
		c := res.choice()
		next := Installed{Name: c.Name, Version: c.Version}
		if installed != nil && *installed == next {
			break
		}
		if at, ok := seen[next]; ok {
			path.Result, path.Loop = predict.Loops, rolled[at:]
			break
		}
		seen[next] = len(rolled)
		rolled = append(rolled, next.Name)
		path.Steps = append(path.Steps, res.step(installed))
		installed = &next
	}
	if installed != nil {
		path.End, path.EndVersion = installed.Name, installed.Version
		if v, err := semver.Parse(installed.Version); err == nil {
			path.endVersion = &v
		}
	}
	switch {
	case path.Result == predict.Unresolvable, path.Result == predict.Loops:
	case path.End == path.Latest:
		path.Result = predict.AtHead
	default:
		path.Result = predict.Stranded
		path.Stranded = last.stranded(path)
	}
	return path, nil
}

// step describes the resolution's choice as the next step from installed.
func (res *resolution) step(installed *Installed) Step {
	b := res.best()
	c := res.choice()
	st := Step{To: c.Name, Version: c.Version, Catalog: c.Catalog, Deprecations: c.Deprecations}
	switch {
	case installed == nil:
		st.Edge = EdgeInstall
	case !res.constrained:
		st.From, st.Edge = installed.Name, EdgeSelfCertified
	default:
		st.From = installed.Name
		st.Edge, st.Channel, st.SkipRange = EdgeSameVersion, b.channel, b.skipRange
		for _, k := range b.edges {
			st.Edges = append(st.Edges, string(k))
		}
		if len(st.Edges) > 0 {
			st.Edge = st.Edges[0]
		}
	}
	st.Passed = res.passed(installed)
	return st
}

// passed explains the candidates the resolution did not choose. With edges, those are every
// successor of the installed bundle; without, every bundle of the channels would be one, and
// only the other catalogs' best ones are listed.
func (res *resolution) passed(installed *Installed) []Passed {
	var chosen *candidate
	if res.chosen != nil {
		chosen = res.best()
	}
	var out []Passed
	add := func(o *offer, c *candidate, why string) {
		if installed != nil && c.bundle.Name == installed.Name || c == chosen {
			return
		}
		out = append(out, Passed{Bundle: c.bundle.Name, Version: candidateVersion(c), Catalog: o.catalog.name, Why: why})
	}
	for _, o := range res.offers {
		switch {
		case o != res.chosen && o.lost != "":
			list := o.matched
			if !res.constrained {
				list = list[:1]
			}
			for _, c := range list {
				add(o, c, "from ClusterCatalog "+o.catalog.name+", passed over: "+o.lost)
			}
		case o == res.chosen && res.constrained:
			for _, c := range o.matched {
				switch {
				case c.deprecated && !chosen.deprecated:
					add(o, c, "deprecated: operator-controller prefers a bundle that is not")
				case c.vr.err != nil || c.vr.vr.Compare(chosen.vr.vr) < 0:
					add(o, c, fmt.Sprintf("lower than %s: operator-controller takes the highest version", chosen.bundle.Name))
				default:
					add(o, c, fmt.Sprintf("the same version as %s, which comes first by name", chosen.bundle.Name))
				}
			}
		}
		if res.constrained {
			for _, c := range o.outOfRange {
				add(o, c, fmt.Sprintf("outside the version range %q", res.req.Version))
			}
		}
	}
	return out
}

func candidateVersion(c *candidate) string {
	if c.vr.err != nil {
		return "no version"
	}
	return legacyVersionString(c.vr.vr)
}

// stranded says why operator-controller keeps the path's end, which is not Latest.
func (res *resolution) stranded(p *Path) string {
	end := p.End
	if p.LatestError != "" {
		return fmt.Sprintf("operator-controller keeps %s, and a new ClusterExtension with this spec would install nothing: %s", end, p.LatestError)
	}
	if !res.constrained {
		return fmt.Sprintf("operator-controller keeps %s, whose version ties with %s", end, p.Latest)
	}
	passed := res.passed(&Installed{Name: end, Version: p.EndVersion})
	if len(passed) == 0 {
		return fmt.Sprintf("no bundle of %s replaces or skips %s, and no skipRange contains %s: operator-controller keeps %s installed", channelsPhrase(p.Channels), end, p.EndVersion, end)
	}
	var whys []string
	for _, c := range passed {
		whys = append(whys, c.Bundle+": "+c.Why)
	}
	return fmt.Sprintf("the bundles that upgrade from %s are passed over (%s): operator-controller keeps %s installed", end, strings.Join(whys, "; "), end)
}

func channelsPhrase(channels []string) string {
	switch len(channels) {
	case 0:
		return "any channel"
	case 1:
		return fmt.Sprintf("channel %q", channels[0])
	}
	quoted := make([]string, len(channels))
	for i, ch := range channels {
		quoted[i] = fmt.Sprintf("%q", ch)
	}
	return "channels " + strings.Join(quoted, ", ")
}

// Text renders OLM v1 paths for people: each bundle operator-controller rolls out, how it was
// chosen, the candidates passed over and why, and where it stops.
func Text(paths []*Path) string {
	var b strings.Builder
	for i, p := range paths {
		if i > 0 {
			b.WriteString("\n")
		}
		multi := len(p.Catalogs) > 1
		var cats []string
		for _, c := range p.Catalogs {
			if multi {
				cats = append(cats, fmt.Sprintf("%s (priority %d)", c.Name, c.Priority))
			} else {
				cats = append(cats, c.Name)
			}
		}
		title := fmt.Sprintf("%s: package %s, %s", strings.Join(cats, ", "), p.Package, channelsPhrase(p.Channels))
		if p.Version != "" {
			title += fmt.Sprintf(", version %q", p.Version)
		}
		if p.Policy == SelfCertified {
			title += ", SelfCertified"
		}
		if p.Latest != "" {
			title += " (latest " + p.Latest + ")"
		} else {
			title += " (a new ClusterExtension installs nothing)"
		}
		b.WriteString(title + "\n")
		if p.Start != nil {
			fmt.Fprintf(&b, "  installed  %s (%s, from %s)\n", p.Start.Name, p.Start.Version, p.Start.Catalog)
		} else {
			b.WriteString("  nothing installed\n")
		}
		shown := map[string]bool{}
		for n, st := range p.Steps {
			edge := st.Edge
			if st.SkipRange != "" && st.Edge == string(upgrade.SkipRange) {
				edge += " " + st.SkipRange
			}
			if st.Channel != "" {
				edge += " in channel " + st.Channel
			}
			if len(st.Edges) > 1 {
				edge += " (also " + strings.Join(st.Edges[1:], ", ") + ")"
			}
			from := ""
			if multi {
				from = ", from " + st.Catalog
			}
			fmt.Fprintf(&b, "  %d. %s (%s%s) by %s\n", n+1, st.To, st.Version, from, edge)
			for _, c := range st.Passed {
				where := ""
				if multi {
					where = ", " + c.Catalog
				}
				fmt.Fprintf(&b, "       not %s (%s%s): %s\n", c.Bundle, c.Version, where, c.Why)
			}
			for _, d := range st.Deprecations {
				if !shown[d] {
					shown[d] = true
					fmt.Fprintf(&b, "       deprecated: %s\n", d)
				}
			}
		}
		switch p.Result {
		case predict.AtHead:
			fmt.Fprintf(&b, "  operator-controller settles on %s, the latest.\n", p.End)
		case predict.Stranded:
			fmt.Fprintf(&b, "  operator-controller stops at %s, short of the latest %s: %s.\n", p.End, orNothing(p.Latest), p.Stranded)
		case predict.Loops:
			fmt.Fprintf(&b, "  %s.\n", p.Why())
		case predict.Unresolvable:
			if p.Refused != "" {
				fmt.Fprintf(&b, "  %s\n", p.Refused)
			} else if p.End == "" {
				fmt.Fprintf(&b, "  operator-controller cannot install the ClusterExtension: Progressing (Retrying): %s\n", p.Progressing)
			} else {
				fmt.Fprintf(&b, "  operator-controller cannot resolve the ClusterExtension and keeps %s: Progressing (Retrying): %s\n", p.End, p.Progressing)
			}
		}
	}
	return b.String()
}

func orNothing(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Picture is the package's upgrade graph in the catalog the path ends in, with the path marked:
// the installed bundle, each step's bundle and, for a step along an edge, the edge. from is the
// catalog the installed bundle came from, when another: its bundles are drawn as foreign nodes.
func (r *Resolver) Picture(p *Path, from *index.Catalog) (*graph.Package, error) {
	catalog := ""
	if n := len(p.Steps); n > 0 {
		catalog = p.Steps[n-1].Catalog
	} else {
		for _, c := range r.catalogs {
			if c.idx.Package(p.Package) != nil {
				catalog = c.name
				break
			}
		}
	}
	idx := r.Index(catalog)
	if idx == nil {
		return nil, fmt.Errorf("package %q is in no ClusterCatalog", p.Package)
	}
	var g *graph.Package
	for _, pkg := range graph.Build(catalog, idx, from) {
		if pkg.Name == p.Package {
			g = &pkg
		}
	}
	if g == nil {
		return nil, fmt.Errorf("package %q is not in ClusterCatalog %s", p.Package, catalog)
	}
	pkg := idx.Package(p.Package)
	foreignStart := p.Start != nil && p.Start.Catalog != catalog
	id := func(bundle, channel string) string {
		if !(foreignStart && bundle == p.Start.Name) {
			if channel != "" && g.HasNode(graph.NodeID(channel, bundle)) {
				return graph.NodeID(channel, bundle)
			}
			for _, ch := range pkg.SortedChannels() {
				if (len(p.Channels) == 0 || slices.Contains(p.Channels, ch.Name)) && ch.Entry(bundle) != nil {
					return graph.NodeID(ch.Name, bundle)
				}
			}
		}
		n := graph.ForeignNodeID(bundle)
		if !g.HasNode(n) {
			g.Foreign = append(g.Foreign, graph.Node{ID: n, Label: bundle, Foreign: true})
		}
		return n
	}
	const color = "#1f6feb"
	if p.Start != nil {
		g.MarkNode(id(p.Start.Name, ""), graph.Mark{Color: color, Note: "installed"})
	}
	for n, st := range p.Steps {
		note := fmt.Sprintf("step %d", n+1)
		to := id(st.To, st.Channel)
		switch kind := upgrade.Kind(st.Edge); kind {
		case upgrade.Replaces, upgrade.Skips, upgrade.SkipRange:
			g.MarkNode(to, graph.Mark{Color: color, Note: note})
			g.MarkEdge(graph.Edge{From: id(st.From, st.Channel), To: to, Kind: kind}, graph.Mark{Color: color, Note: note})
		default:
			g.MarkNode(to, graph.Mark{Color: color, Note: note + " (" + st.Edge + ")"})
		}
	}
	return g, nil
}
