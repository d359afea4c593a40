// Package olmv1 predicts OLM v1: the bundle operator-controller picks for a ClusterExtension
// (Resolver.Resolve: one reconcile) and every bundle it rolls out until it settles
// (Resolver.Walk). operator-controller's rule is not run but restated, as operator-controller is
// not a dependency of this module; it was checked against operator-controller v1.11.0's
// CatalogResolver on 20,000 random catalogs and ClusterExtensions, choices and error messages
// alike, with no difference, and test/e2e's TestSimulateV1MatchesOperatorController checks it
// against a running operator-controller.
package olmv1

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/internal/upgrade"
)

// OLM v1 installs a package through a ClusterExtension, and operator-controller picks its bundle
// from every ClusterCatalog by a rule of its own, restated here from operator-controller v1.11.0
// (the module's source is the reference; nothing of it is linked):
//   - which catalogs, and the "nothing found" and "ambiguous" errors:
//     internal/operator-controller/resolve/catalog.go, CatalogResolver.Resolve;
//   - which bundles of a catalog are candidates: the filters of
//     internal/operator-controller/catalogmetadata/filter (InAnyChannel, InSemverRange,
//     SuccessorsOf with its legacySuccessor and ExactVersionRelease);
//   - their order: internal/operator-controller/catalogmetadata/compare (ByDeprecationFunc, then
//     ByVersionAndRelease), over the version and release of internal/operator-controller/bundleutil
//     with the BundleReleaseSupport feature gate off, as it ships;
//   - the version range: compare.NewVersionRange, Masterminds/semver v3 constraints (range.go);
//   - the check of the chosen bundle: resolve.NoDependencyValidation, the one validation
//     cmd/operator-controller/main.go configures;
//   - what the API server refuses first: api/v1/clusterextension_types.go's CRD rules.
// The upgrade-edge test of a candidate is internal/upgrade's, the project's one statement of
// the rule, which operator-controller's legacySuccessor matches: replaces names the installed
// bundle, skips lists it, or the skipRange (blang semver) contains its version.

// UpgradeConstraintPolicy is a ClusterExtension's spec.source.catalog.upgradeConstraintPolicy.
type UpgradeConstraintPolicy string

const (
	// CatalogProvided, the default: an installed bundle moves only along the catalog's upgrade
	// edges.
	CatalogProvided UpgradeConstraintPolicy = "CatalogProvided"
	// SelfCertified: the edges are ignored; any bundle of the channels and range may replace the
	// installed one, a lower one included.
	SelfCertified UpgradeConstraintPolicy = "SelfCertified"
)

// Catalog is a ClusterCatalog as operator-controller reads it: its name, its spec.priority,
// and the file-based catalog it serves. Only catalogs the ClusterExtension's selector picks and
// whose availabilityMode is not Unavailable belong in a resolution.
type Catalog struct {
	Name     string
	Priority int32
	Config   *declcfg.DeclarativeConfig
}

// Installed is the bundle a ClusterExtension has installed, as its
// status.install.bundle records it: the name, and the version as operator-controller writes it
// (a registry+v1 release back in the build metadata, 1.0.0+2).
type Installed struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Request is a ClusterExtension's spec.source.catalog, and what it has installed.
type Request struct {
	Package string
	// Channels, when given, limit the candidates to bundles of these channels, and the upgrade
	// edges to those the channels declare.
	Channels []string
	// Version is a version range in Masterminds/semver syntax (">=1.2, <2", "1.2.x", "~1.2"),
	// or "" for any.
	Version string
	// Policy is the upgrade constraint policy; "" is CatalogProvided.
	Policy UpgradeConstraintPolicy
	// Installed is nil for a ClusterExtension that has nothing installed yet.
	Installed *Installed
}

// Choice is the bundle operator-controller resolves: what it installs, or keeps.
type Choice struct {
	Name string `json:"name"`
	// Version is the version status.install.bundle will record.
	Version string `json:"version"`
	// Catalog is the ClusterCatalog it comes from.
	Catalog string `json:"catalog"`
	// Deprecations are the deprecation messages the ClusterExtension's Deprecated condition
	// will carry once Name is installed: the package's, the channels' (those of the spec, or
	// every channel when it names none) and Name's own, from Catalog's olm.deprecations. (With
	// several catalogs offering the package, operator-controller v1.11.0 may take them from
	// another of them, the last it walked; that is a slip of its, not repeated here.)
	Deprecations []string `json:"deprecations,omitempty"`
}

// SpecError is a ClusterExtension the API server refuses, by the CRD's validation rules: it is
// never created, and operator-controller never sees it.
type SpecError struct {
	// Field is the field's path, as spec.source.catalog.version.
	Field string
	Value string
	// Reason is the API server's: "Required value", "Too long: may not be more than 64 bytes",
	// the CEL rule's message.
	Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("the API server refuses the ClusterExtension: %s: Invalid value: %q: %s", e.Field, e.Value, e.Reason)
}

// ResolutionErrorKind says why operator-controller cannot pick a bundle.
type ResolutionErrorKind string

const (
	// V1NoBundle: no catalog has a bundle that passes the filters.
	V1NoBundle ResolutionErrorKind = "NoBundle"
	// V1Ambiguous: the best bundles come from catalogs of the same, highest priority.
	V1Ambiguous ResolutionErrorKind = "Ambiguous"
	// V1InvalidVersionRange: spec.source.catalog.version passed the API server but does not
	// parse as a constraint.
	V1InvalidVersionRange ResolutionErrorKind = "InvalidVersionRange"
	// V1InvalidInstalledVersion: the installed bundle's version is not semver.
	V1InvalidInstalledVersion ResolutionErrorKind = "InvalidInstalledVersion"
	// V1InvalidBundleVersion: the chosen bundle has no readable version.
	V1InvalidBundleVersion ResolutionErrorKind = "InvalidBundleVersion"
	// V1Dependency: the chosen bundle declares a dependency, which operator-controller does not
	// resolve: it refuses the bundle rather than pick another.
	V1Dependency ResolutionErrorKind = "Dependency"
)

// ResolutionError is operator-controller failing to resolve: Message is its error, which it
// sets as the ClusterExtension's Progressing condition message (reason Retrying), and it keeps
// what is installed.
type ResolutionError struct {
	Kind    ResolutionErrorKind
	Message string
	// Catalogs are the catalogs of an ambiguity.
	Catalogs []string
}

func (e *ResolutionError) Error() string { return e.Message }

// Resolver holds ClusterCatalogs indexed once, for many resolutions. It is safe for concurrent
// use.
type Resolver struct {
	catalogs []*servedCatalog
}

type servedCatalog struct {
	name     string
	priority int32
	idx      *index.Catalog
	// versions are the bundles' versions and releases, read once.
	versions map[*index.Bundle]versionRelease
	// entries are each channel's entries by bundle name, every one of them: a channel that
	// lists a bundle twice has both entries' edges read.
	entries map[*index.Channel]map[string][]*index.Entry
}

// versionRelease is a bundle's version and release as bundleutil.GetVersionAndRelease reads
// them, or why it cannot.
type versionRelease struct {
	vr  *declcfg.VersionRelease
	err error
}

// NewResolver indexes the catalogs. Their order does not matter, as operator-controller lists
// ClusterCatalogs in no set order and its rule does not depend on it.
func NewResolver(catalogs ...Catalog) (*Resolver, error) {
	r := &Resolver{}
	seen := map[string]bool{}
	for _, c := range catalogs {
		if seen[c.Name] {
			return nil, fmt.Errorf("two ClusterCatalogs are named %q: name them apart", c.Name)
		}
		seen[c.Name] = true
		if c.Config == nil {
			return nil, fmt.Errorf("ClusterCatalog %q has no content", c.Name)
		}
		vc := &servedCatalog{name: c.Name, priority: c.Priority, idx: index.New(c.Config),
			versions: map[*index.Bundle]versionRelease{}, entries: map[*index.Channel]map[string][]*index.Entry{}}
		for _, p := range vc.idx.Packages() {
			for _, b := range p.Bundles {
				vr, err := bundleVersionRelease(b.Decl)
				vc.versions[b] = versionRelease{vr, err}
			}
			for _, ch := range p.Channels {
				byName := map[string][]*index.Entry{}
				for _, e := range ch.Entries {
					byName[e.Name] = append(byName[e.Name], e)
				}
				vc.entries[ch] = byName
			}
		}
		r.catalogs = append(r.catalogs, vc)
	}
	return r, nil
}

// Resolve predicts the bundle operator-controller v1.11.0 resolves for a ClusterExtension
// with spec.source.catalog req (and req.Installed installed) over the resolver's ClusterCatalogs,
// in one reconcile: what it installs, upgrades to, or keeps. The catalogs are those the
// ClusterExtension's selector picks and that are not Unavailable, each with its spec.priority (0
// when unset); req.Installed.Version is status.install.bundle.version as operator-controller
// wrote it. The feature gates are as v1.11.0 ships them (BundleReleaseSupport off).
//
// The rule, in operator-controller's order:
//  1. The API server's CRD rules: a package name and channels that are DNS-1123 subdomains,
//     a version range of at most 64 characters matching the CRD's expression, a known policy.
//     A refusal is a *SpecError.
//  2. In each catalog that has the package, the candidates are its bundles that are in one of
//     req.Channels (any bundle when none is given), whose version is in req.Version (a
//     pre-release only when the range names one), and, with an installed bundle and the
//     CatalogProvided policy, that are the installed bundle's successors in those channels: the
//     channel entry's replaces or skips names it, or its skipRange contains its version; or that
//     have its exact version and release, so that staying put is a candidate. SelfCertified drops
//     the successor filter: any version in range, a downgrade included.
//  3. A catalog's best candidate is its highest version and release among those not deprecated
//     by an olm.deprecations bundle entry; deprecated ones only when nothing else is left.
//  4. Across catalogs, a catalog whose best is deprecated loses to one whose best is not; then the
//     highest spec.priority wins; two or more catalogs left at the top priority are ambiguous,
//     and the error names every catalog still in the running, those of lower priority too.
//  5. The chosen bundle must declare no dependency (olm.package.required, olm.gvk.required,
//     olm.constraint): operator-controller refuses it rather than pick another.
//
// Every failure of 2-5 is a *ResolutionError whose message is operator-controller's, the one
// it sets on the ClusterExtension's Progressing condition; it then keeps what is installed.
//
// Bundles of a catalog that tie on version, release and deprecation come out in operator-
// controller in the order it loaded them, which is not defined; here the first by name wins.
func (r *Resolver) Resolve(req Request) (*Choice, error) {
	res, err := r.resolve(req)
	if err != nil {
		return nil, err
	}
	if res.err != nil {
		return nil, res.err
	}
	return res.choice(), nil
}

// HasPackage reports whether a catalog of the resolver has the package.
func (r *Resolver) HasPackage(pkg string) bool {
	for _, c := range r.catalogs {
		if c.idx.Package(pkg) != nil {
			return true
		}
	}
	return false
}

// Catalogs lists the resolver's catalogs, in the order given, with their priorities.
func (r *Resolver) Catalogs() []CatalogRef {
	out := make([]CatalogRef, len(r.catalogs))
	for i, c := range r.catalogs {
		out[i] = CatalogRef{Name: c.name, Priority: c.priority}
	}
	return out
}

// Index is a catalog's model, nil for a name the resolver lacks.
func (r *Resolver) Index(catalog string) *index.Catalog {
	for _, c := range r.catalogs {
		if c.name == catalog {
			return c.idx
		}
	}
	return nil
}

// CatalogRef names a ClusterCatalog and its priority.
type CatalogRef struct {
	Name     string `json:"name"`
	Priority int32  `json:"priority"`
}

// candidate is a bundle that passed a catalog's channel filter, and where it stands.
type candidate struct {
	bundle     *index.Bundle
	vr         versionRelease
	deprecated bool
	inRange    bool
	// edges are the fields through which it upgrades from the installed bundle in the allowed
	// channels; channel and skipRange are those of the first channel, by name, with an edge.
	edges     []upgrade.Kind
	channel   string
	skipRange string
	// sameVersion: it has the installed bundle's version and release.
	sameVersion bool
}

// offer is one catalog's part in a resolution.
type offer struct {
	catalog     *servedCatalog
	deprecation *declcfg.Deprecation
	// matched passed every filter, best first; outOfRange passed all but the version range.
	matched    []*candidate
	outOfRange []*candidate
	// lost says why this catalog's best was not chosen.
	lost string
}

// resolution is one reconcile's resolution, with what explains it.
type resolution struct {
	req         Request
	constrained bool
	offers      []*offer
	chosen      *offer
	err         *ResolutionError
}

func (res *resolution) best() *candidate { return res.chosen.matched[0] }

func (res *resolution) choice() *Choice {
	b := res.best()
	return &Choice{
		Name: b.bundle.Name, Version: legacyVersionString(b.vr.vr), Catalog: res.chosen.catalog.name,
		Deprecations: deprecationMessages(res.chosen.deprecation, res.req.Channels, b.bundle.Name),
	}
}

func (r *Resolver) resolve(req Request) (*resolution, error) {
	if err := CheckSpec(req); err != nil {
		return nil, err
	}
	res := &resolution{req: req, constrained: req.Installed != nil && req.Policy != SelfCertified}
	fail := func(kind ResolutionErrorKind, format string, args ...any) (*resolution, error) {
		res.err = &ResolutionError{Kind: kind, Message: fmt.Sprintf(format, args...)}
		res.chosen = nil
		return res, nil
	}
	var inRange *versionRange
	if req.Version != "" {
		var err error
		if inRange, err = parseVersionRange(req.Version); err != nil {
			return fail(V1InvalidVersionRange, "desired version range %q is invalid: %v", req.Version, err)
		}
	}
	var kept []*offer
	for _, c := range r.catalogs {
		p := c.idx.Package(req.Package)
		if p == nil {
			continue
		}
		o := &offer{catalog: c}
		if len(p.Deprecations) > 0 {
			// catalogd stores one olm.deprecations blob per package: the last one read.
			o.deprecation = p.Deprecations[len(p.Deprecations)-1]
		}
		res.offers = append(res.offers, o)
		var installedVR *declcfg.VersionRelease
		var installedV semver.Version
		if res.constrained {
			var err error
			if installedVR, err = legacyVersionRelease(req.Installed.Version); err != nil {
				return fail(V1InvalidInstalledVersion, "error walking catalogs: error finding upgrade edges: failed to get version and release of installed bundle: %v", err)
			}
			installedV, _ = semver.Parse(req.Installed.Version)
		}
		channels := AllowedChannels(p, req.Channels)
		for _, name := range slices.Sorted(maps.Keys(p.Bundles)) {
			b := p.Bundles[name]
			cand := &candidate{bundle: b, vr: c.versions[b], deprecated: deprecatesBundle(o.deprecation, name)}
			inChannel := false
			for _, ch := range channels {
				inChannel = inChannel || len(c.entries[ch][name]) > 0
			}
			if len(req.Channels) > 0 && !inChannel {
				continue
			}
			if res.constrained {
				for _, ch := range channels {
					for _, e := range c.entries[ch][name] {
						kinds := e.Rule.Kinds(req.Installed.Name, &installedV)
						for _, k := range kinds {
							if !slices.Contains(cand.edges, k) {
								cand.edges = append(cand.edges, k)
							}
						}
						if cand.channel == "" && len(kinds) > 0 {
							cand.channel = ch.Name
							if slices.Contains(kinds, upgrade.SkipRange) {
								cand.skipRange = e.Decl.SkipRange
							}
						}
					}
				}
				cand.sameVersion = cand.vr.err == nil && cand.vr.vr.Compare(installedVR) == 0
				if len(cand.edges) == 0 && !cand.sameVersion {
					continue
				}
			}
			cand.inRange = inRange == nil || cand.vr.err == nil && inRange.contains(cand.vr.vr.Version.String())
			if cand.inRange {
				o.matched = append(o.matched, cand)
			} else {
				o.outOfRange = append(o.outOfRange, cand)
			}
		}
		if len(o.matched) == 0 {
			continue
		}
		sort.SliceStable(o.matched, func(i, j int) bool { return compareCandidates(o.matched[i], o.matched[j]) < 0 })
		// A catalog whose best is deprecated only counts while no catalog offers one that is not.
		top := o.matched[0]
		if len(kept) > 0 {
			prior := kept[len(kept)-1]
			switch {
			case top.deprecated && !prior.matched[0].deprecated:
				o.lost = fmt.Sprintf("deprecated, and ClusterCatalog %s offers %s, which is not", prior.catalog.name, prior.matched[0].bundle.Name)
				continue
			case !top.deprecated && prior.matched[0].deprecated:
				for _, k := range kept {
					k.lost = fmt.Sprintf("deprecated, and ClusterCatalog %s offers %s, which is not", c.name, top.bundle.Name)
				}
				kept = nil
			}
		}
		kept = append(kept, o)
	}
	if len(kept) > 1 {
		sort.SliceStable(kept, func(i, j int) bool { return kept[i].catalog.priority > kept[j].catalog.priority })
		if kept[0].catalog.priority != kept[1].catalog.priority {
			for _, k := range kept[1:] {
				k.lost = fmt.Sprintf("ClusterCatalog %s has priority %d, above this one's %d", kept[0].catalog.name, kept[0].catalog.priority, k.catalog.priority)
			}
			kept = kept[:1]
		}
	}
	if len(kept) != 1 {
		res.err = noBundleError(req, kept)
		return res, nil
	}
	res.chosen = kept[0]
	b := res.best()
	if b.vr.err != nil {
		return fail(V1InvalidBundleVersion, "error getting resolved bundle version for bundle %q: %v", b.bundle.Name, b.vr.err)
	}
	for _, p := range b.bundle.Decl.Properties {
		switch p.Type {
		case property.TypePackageRequired, property.TypeGVKRequired, property.TypeConstraint:
			return fail(V1Dependency, "validating bundle %q: bundle %q has a dependency declared via property %q which is currently not supported", b.bundle.Name, b.bundle.Name, p.Type)
		}
	}
	return res, nil
}

// noBundleError is operator-controller's error when no catalog, or more than one of the top
// priority, offers a bundle, word for word.
func noBundleError(req Request, kept []*offer) *ResolutionError {
	var b strings.Builder
	if req.Installed != nil {
		fmt.Fprintf(&b, "error upgrading from currently installed version %q: ", req.Installed.Version)
	}
	kind := V1NoBundle
	if len(kept) > 1 {
		kind = V1Ambiguous
		fmt.Fprintf(&b, "found bundles for package %q ", req.Package)
	} else {
		fmt.Fprintf(&b, "no bundles found for package %q ", req.Package)
	}
	if req.Version != "" {
		fmt.Fprintf(&b, "matching version %q ", req.Version)
	}
	if len(req.Channels) > 0 {
		fmt.Fprintf(&b, "in channels %v ", req.Channels)
	}
	var names []string
	for _, k := range kept {
		names = append(names, k.catalog.name)
	}
	slices.Sort(names)
	if len(names) > 1 {
		fmt.Fprintf(&b, "in multiple catalogs with the same priority %v ", names)
	}
	e := &ResolutionError{Kind: kind, Message: strings.TrimSpace(b.String())}
	if kind == V1Ambiguous {
		e.Catalogs = names
	}
	return e
}

// AllowedChannels are the package's channels a spec's channels allow, all when it names none,
// by name. Channels the package lacks are ignored, as operator-controller ignores them.
func AllowedChannels(p *index.Package, names []string) []*index.Channel {
	var out []*index.Channel
	for _, ch := range p.SortedChannels() {
		if len(names) == 0 || slices.Contains(names, ch.Name) {
			out = append(out, ch)
		}
	}
	return out
}

// compareCandidates orders a catalog's candidates as operator-controller does: not deprecated
// first, then by version and release, highest first, those without a readable version last.
func compareCandidates(a, b *candidate) int {
	if a.deprecated != b.deprecated {
		if a.deprecated {
			return 1
		}
		return -1
	}
	switch {
	case a.vr.err != nil && b.vr.err != nil:
		return 0
	case a.vr.err != nil:
		return 1
	case b.vr.err != nil:
		return -1
	}
	return b.vr.vr.Compare(a.vr.vr)
}

func deprecatesBundle(d *declcfg.Deprecation, bundle string) bool {
	if d == nil {
		return false
	}
	for _, e := range d.Entries {
		if e.Reference.Schema == declcfg.SchemaBundle && e.Reference.Name == bundle {
			return true
		}
	}
	return false
}

// deprecationMessages are the messages operator-controller's Deprecated condition carries with
// bundle installed: the package's, the channels' (every channel's when the spec names none), the
// bundle's.
func deprecationMessages(d *declcfg.Deprecation, channels []string, bundle string) []string {
	if d == nil {
		return nil
	}
	var pkg, chs, own []string
	for _, e := range d.Entries {
		if e.Message == "" {
			continue
		}
		switch e.Reference.Schema {
		case declcfg.SchemaPackage:
			pkg = append(pkg, e.Message)
		case declcfg.SchemaChannel:
			if len(channels) == 0 || slices.Contains(channels, e.Reference.Name) {
				chs = append(chs, e.Message)
			}
		case declcfg.SchemaBundle:
			if e.Reference.Name == bundle {
				own = append(own, e.Message)
			}
		}
	}
	return slices.Concat(pkg, chs, own)
}

// bundleVersionRelease reads a bundle's version and release from its first olm.package
// property, as operator-controller does with BundleReleaseSupport off: the property's release
// field is not read, and a build metadata that parses as a release is the release.
func bundleVersionRelease(b *declcfg.Bundle) (*declcfg.VersionRelease, error) {
	for _, p := range b.Properties {
		if p.Type != property.TypePackage {
			continue
		}
		var pkg property.Package
		if err := json.Unmarshal(p.Value, &pkg); err != nil {
			return nil, fmt.Errorf("error unmarshalling package property: %w", err)
		}
		return legacyVersionRelease(pkg.Version)
	}
	return nil, fmt.Errorf("no package property found in bundle %q", b.Name)
}

// legacyVersionRelease splits a registry+v1 version: build metadata that parses as a release
// (1.0.0+2) is the release, and leaves the version; any other stays the version's.
func legacyVersionRelease(s string) (*declcfg.VersionRelease, error) {
	v, err := semver.Parse(s)
	if err != nil {
		return nil, err
	}
	vr := &declcfg.VersionRelease{Version: v}
	if rel, err := declcfg.NewRelease(strings.Join(v.Build, ".")); err == nil && len(rel) > 0 {
		vr.Release, vr.Version.Build = rel, nil
	}
	return vr, nil
}

// legacyVersionString is the version status.install.bundle records: the release back in the
// build metadata.
func legacyVersionString(vr *declcfg.VersionRelease) string {
	v := vr.Version
	if len(vr.Release) > 0 {
		v.Build = strings.Split(vr.Release.String(), ".")
	}
	return v.String()
}

// The CRD's rules for spec.source.catalog that the API server applies.
var (
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// CheckSpec applies the CRD's rules to the request, the API server's part: a *SpecError names
// the field it refuses.
func CheckSpec(req Request) error {
	const catalogPath = "spec.source.catalog."
	switch {
	case req.Package == "":
		return &SpecError{Field: catalogPath + "packageName", Reason: "Required value"}
	case len(req.Package) > 253:
		return &SpecError{Field: catalogPath + "packageName", Value: req.Package, Reason: "Too long: may not be more than 253 bytes"}
	case !dns1123Subdomain.MatchString(req.Package):
		return &SpecError{Field: catalogPath + "packageName", Value: req.Package, Reason: "packageName must be a valid DNS1123 subdomain. It must contain only lowercase alphanumeric characters, hyphens (-) or periods (.), start and end with an alphanumeric character, and be no longer than 253 characters"}
	case len(req.Channels) > 256:
		return &SpecError{Field: catalogPath + "channels", Value: strings.Join(req.Channels, ","), Reason: "Too many: must have at most 256 items"}
	}
	for i, ch := range req.Channels {
		field := fmt.Sprintf("%schannels[%d]", catalogPath, i)
		if len(ch) > 253 {
			return &SpecError{Field: field, Value: ch, Reason: "Too long: may not be more than 253 bytes"}
		}
		if !dns1123Subdomain.MatchString(ch) {
			return &SpecError{Field: field, Value: ch, Reason: "channels entries must be valid DNS1123 subdomains"}
		}
	}
	if len(req.Version) > versionMaxLength {
		return &SpecError{Field: catalogPath + "version", Value: req.Version, Reason: fmt.Sprintf("Too long: may not be more than %d bytes", versionMaxLength)}
	}
	if req.Version != "" && !versionExpression.MatchString(req.Version) {
		return &SpecError{Field: catalogPath + "version", Value: req.Version, Reason: "invalid version expression"}
	}
	if req.Policy != "" && req.Policy != CatalogProvided && req.Policy != SelfCertified {
		return &SpecError{Field: catalogPath + "upgradeConstraintPolicy", Value: string(req.Policy), Reason: `Unsupported value: supported values: "CatalogProvided", "SelfCertified"`}
	}
	return nil
}
