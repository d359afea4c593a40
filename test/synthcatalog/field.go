package synthcatalog

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The field catalogs have the shape of OperatorHub's public file-based catalogs rather than the
// project's: 40 packages and about 800 bundles, versions with pre-releases (0.2.2-rc.10), a
// second channel with a lower head, skipRanges, deprecations of bundles, channels and packages,
// and bundles that depend on other packages' APIs, on a second catalog's (cert-manager's Issuer,
// the cert-manager package) and on an API nothing provides. They carry the old mistakes the
// field has too: in some packages a bundle replaces and skips the same release, so OLM never
// upgrades the one before it.

// Field catalog names, as a cluster's CatalogSources would be named.
const (
	FieldCatalog     = "field"
	FieldDepsCatalog = "field-deps"
)

// FieldPackages is the number of packages of the field catalog.
const FieldPackages = 40

// FieldPackage is the name of the field catalog's i-th package.
func FieldPackage(i int) string { return fmt.Sprintf("field-%02d-operator", i) }

// The packages by what the tests need of them: the index into the field catalog.
const (
	// FieldStranding packages (i%4) have releases OLM never upgrades: those up to StrandedAt.
	FieldStranding = 1
	StrandedAt     = 5
	// FieldNeedsIssuer packages (i%8) require cert-manager.io/v1 Issuer, which only the deps
	// catalog provides.
	FieldNeedsIssuer = 3
	// FieldNeedsCertManager packages (i%8) require the package cert-manager >=1.12.2, from the
	// deps catalog.
	FieldNeedsCertManager = 7
	// FieldNeedsSibling packages (i%5, when not one of the above) require the API of the next
	// package of the same catalog.
	FieldNeedsSibling = 2
	// FieldNeedsNothingProvides requires an API nothing provides anywhere.
	FieldNeedsNothingProvides = 39
)

type fieldRelease struct {
	version  string
	replaces string
	skips    []string
	skip     string
	props    []property.Property
}

// FieldConfigs builds the field catalog and the catalog that provides its dependencies.
func FieldConfigs() (field, deps *declcfg.DeclarativeConfig) {
	field = &declcfg.DeclarativeConfig{}
	for i := range FieldPackages {
		addFieldPackage(field, i)
	}
	deps = &declcfg.DeclarativeConfig{}
	addCertManager(deps)
	return field, deps
}

// fieldVersions are a package's versions in upgrade order: minors of ten patches; packages with
// i%7 == 0 ship two release candidates before every fifth patch.
func fieldVersions(i, n int) []string {
	var out []string
	for k := 0; len(out) < n; k++ {
		minor, patch := k/10, k%10
		if i%7 == 0 && patch%5 == 2 {
			for rc := 9; rc <= 10 && len(out) < n; rc++ {
				out = append(out, fmt.Sprintf("0.%d.%d-rc.%d", minor, patch, rc))
			}
		}
		if len(out) < n {
			out = append(out, fmt.Sprintf("0.%d.%d", minor, patch))
		}
	}
	return out
}

func addFieldPackage(cfg *declcfg.DeclarativeConfig, i int) {
	pkg := FieldPackage(i)
	// 8 to 32 bundles, 800 in all.
	versions := fieldVersions(i, 8+(i*7)%25)
	name := func(k int) string { return BundleName(pkg, versions[k]) }
	provides := property.MustBuildGVK(fmt.Sprintf("field%02d.example.com", i), "v1", fmt.Sprintf("Thing%02d", i))
	var releases []fieldRelease
	for k, v := range versions {
		r := fieldRelease{version: v, props: []property.Property{provides}}
		if k > 0 {
			r.replaces = name(k - 1)
		}
		if k%5 == 0 && k >= 3 {
			r.skip = fmt.Sprintf(">=%s <%s", versions[k-3], v)
		}
		// The dependencies start half-way, as when an operator takes one on in a release.
		if k >= len(versions)/2 {
			switch {
			case i == FieldNeedsNothingProvides:
				r.props = append(r.props, property.MustBuildGVKRequired("nothing.example.com", "v1", "Missing"))
			case i%8 == FieldNeedsIssuer:
				r.props = append(r.props, property.MustBuildGVKRequired("cert-manager.io", "v1", "Issuer"))
			case i%8 == FieldNeedsCertManager:
				r.props = append(r.props, property.MustBuildPackageRequired("cert-manager", ">=1.12.2"))
			case i%5 == FieldNeedsSibling:
				n := (i + 1) % FieldPackages
				r.props = append(r.props, property.MustBuildGVKRequired(fmt.Sprintf("field%02d.example.com", n), "v1", fmt.Sprintf("Thing%02d", n)))
			}
		}
		releases = append(releases, r)
	}
	// The mistake: a release that skipped every earlier one was pulled, skipped by the next,
	// which replaces it. opm validate accepts it (every bundle is on the replaces chain from the
	// head or skipped), but OLM never takes a skipped release as an upgrade, so the releases up to
	// StrandedAt have nowhere to go.
	if i%4 == FieldStranding {
		for k := 0; k <= StrandedAt; k++ {
			releases[StrandedAt+1].skips = append(releases[StrandedAt+1].skips, name(k))
		}
		releases[StrandedAt+2].skips = []string{name(StrandedAt + 1)}
	}
	channels := []declcfg.Channel{channel(pkg, "stable", releases)}
	// A fast channel ahead of stable: stable lacks the last two releases.
	if i%3 == 0 {
		channels = []declcfg.Channel{channel(pkg, "stable", releases[:len(releases)-2]), channel(pkg, "fast", releases)}
	}
	addPackage(cfg, pkg, releases, channels...)
	if i%6 == 0 {
		d := declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: pkg, Entries: []declcfg.DeprecationEntry{{
			Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: name(0)},
			Message:   "the first release loses data on upgrade: upgrade at once",
		}}}
		if i%12 == 0 {
			d.Entries = append(d.Entries, declcfg.DeprecationEntry{
				Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: "stable"},
				Message:   "stable is no longer updated: subscribe to fast",
			})
		}
		if i == 18 {
			d.Entries = append(d.Entries, declcfg.DeprecationEntry{
				Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage},
				Message:   pkg + " is end of life",
			})
		}
		cfg.Deprecations = append(cfg.Deprecations, d)
	}
}

func channel(pkg, name string, releases []fieldRelease) declcfg.Channel {
	ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: pkg, Name: name}
	for _, r := range releases {
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{
			Name: BundleName(pkg, r.version), Replaces: r.replaces, Skips: slices.Clone(r.skips), SkipRange: r.skip,
		})
	}
	return ch
}

// addCertManager is the deps catalog: cert-manager, which provides the Issuer.
func addCertManager(cfg *declcfg.DeclarativeConfig) {
	const pkg = "cert-manager"
	versions := []string{"1.11.0", "1.12.2", "1.13.1", "1.14.4"}
	var releases []fieldRelease
	for k, v := range versions {
		r := fieldRelease{version: v, props: []property.Property{
			property.MustBuildGVK("cert-manager.io", "v1", "Issuer"),
			property.MustBuildGVK("cert-manager.io", "v1", "Certificate"),
		}}
		if k > 0 {
			r.replaces = BundleName(pkg, versions[k-1])
		}
		releases = append(releases, r)
	}
	addPackage(cfg, pkg, releases, channel(pkg, "stable", releases))
}

// addPackage adds a package whose default channel is stable, its channels and its releases'
// bundles.
func addPackage(cfg *declcfg.DeclarativeConfig, pkg string, releases []fieldRelease, channels ...declcfg.Channel) {
	cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: "stable",
		Description: fieldDescription(pkg), Icon: &declcfg.Icon{MediaType: "image/png", Data: fieldBytes(pkg, fieldIconSize)}})
	cfg.Channels = append(cfg.Channels, channels...)
	for _, r := range releases {
		cfg.Bundles = append(cfg.Bundles, fieldBundle(pkg, r.version, r.props...))
	}
}

// WriteFieldCatalogs writes the field catalog and its deps catalog into dirs as opm lays catalogs
// out.
func WriteFieldCatalogs(fieldDir, depsDir string) error {
	field, deps := FieldConfigs()
	if err := declcfg.WriteFS(*field, fieldDir, declcfg.WriteJSON, ".json"); err != nil {
		return err
	}
	return declcfg.WriteFS(*deps, depsDir, declcfg.WriteJSON, ".json")
}

// AddFieldRelease releases version of a package of cfg above every channel's head: a bundle that
// replaces the head, provides and requires what the head does, and is the new head.
func AddFieldRelease(cfg *declcfg.DeclarativeConfig, pkg, version string) error {
	var heads []string
	for i := range cfg.Channels {
		ch := &cfg.Channels[i]
		if ch.Package != pkg {
			continue
		}
		replaced := map[string]bool{}
		for _, e := range ch.Entries {
			replaced[e.Replaces] = true
		}
		for _, e := range ch.Entries {
			if !replaced[e.Name] {
				heads = append(heads, e.Name)
				ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: BundleName(pkg, version), Replaces: e.Name})
				break
			}
		}
	}
	if len(heads) == 0 {
		return fmt.Errorf("package %q has no channel", pkg)
	}
	var props []property.Property
	for _, b := range cfg.Bundles {
		if b.Name == heads[0] {
			for _, p := range b.Properties {
				if p.Type != property.TypePackage && p.Type != property.TypeCSVMetadata {
					props = append(props, p)
				}
			}
		}
	}
	cfg.Bundles = append(cfg.Bundles, fieldBundle(pkg, version, props...))
	return nil
}

// fieldBundle is a bundle as published catalogs carry it: a bundle image, the operator's image,
// and the CSV's metadata OperatorHub shows, with the APIs it provides and requires. The metadata
// is as large as the field's (a long description, alm-examples, CRD descriptors), about 16 KB a
// bundle, so that the catalog verbs spend their time as they do on OperatorHub's catalogs.
func fieldBundle(pkg, version string, props ...property.Property) declcfg.Bundle {
	operator := fmt.Sprintf("quay.io/field/%s:v%s", pkg, version)
	var examples, specs []string
	var descriptors []operatorsv1alpha1.SpecDescriptor
	for k := range 12 {
		field := fmt.Sprintf("setting%02d", k)
		specs = append(specs, fmt.Sprintf("%q: %q", field, "value of "+field))
		descriptors = append(descriptors, operatorsv1alpha1.SpecDescriptor{
			Path: field, DisplayName: "Setting " + field,
			Description:  fmt.Sprintf("How the operator sets %s of the operand: see the documentation of %s for the values it takes and what each changes.", field, pkg),
			XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:text", "urn:alm:descriptor:com.tectonic.ui:fieldGroup:settings"},
		})
	}
	for k := range 4 {
		examples = append(examples, fmt.Sprintf(`{"apiVersion":"%s.example.com/v1","kind":"Thing","metadata":{"name":"example-%d"},"spec":{%s}}`, pkg, k, strings.Join(specs, ",")))
	}
	meta := property.MustBuildCSVMetadata(operatorsv1alpha1.ClusterServiceVersion{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			"alm-examples":   "[" + strings.Join(examples, ",") + "]",
			"capabilities":   "Full Lifecycle",
			"categories":     "Storage,Security",
			"containerImage": operator,
			"createdAt":      "2024-05-01T00:00:00Z",
			"description":    "An operator of the field's shape.",
			"repository":     "https://github.com/field/" + pkg,
			"support":        "field",
		}},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: pkg,
			Description: fieldDescription(pkg),
			Provider:    operatorsv1alpha1.AppLink{Name: "field"},
			Keywords:    []string{"field", "synthetic"},
			Maintainers: []operatorsv1alpha1.Maintainer{{Name: "field", Email: "field@example.com"}},
			Links:       []operatorsv1alpha1.AppLink{{Name: "Documentation", URL: "https://example.com/" + pkg}},
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			CustomResourceDefinitions: operatorsv1alpha1.CustomResourceDefinitions{Owned: []operatorsv1alpha1.CRDDescription{{
				Name: "things." + pkg + ".example.com", Version: "v1", Kind: "Thing", DisplayName: "Thing",
				Description:       "A thing the operator manages.",
				SpecDescriptors:   descriptors,
				StatusDescriptors: []operatorsv1alpha1.StatusDescriptor{{Path: "conditions", DisplayName: "Conditions", XDescriptors: []string{"urn:alm:descriptor:io.kubernetes.conditions"}}},
			}}},
		},
	})
	return declcfg.Bundle{
		Schema: declcfg.SchemaBundle, Name: BundleName(pkg, version), Package: pkg,
		Image:         fmt.Sprintf("quay.io/field/%s-bundle:v%s", pkg, version),
		Properties:    append([]property.Property{property.MustBuildPackage(pkg, version), meta}, props...),
		RelatedImages: []declcfg.RelatedImage{{Name: "operator", Image: operator}},
	}
}

// fieldDescription is a package's long description, in markdown as OperatorHub shows it.
func fieldDescription(pkg string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## About %s\n\n", pkg)
	for k := range 24 {
		fmt.Fprintf(&b, "- Feature %d: the operator installs, configures and upgrades part %d of the operand, and reports its health in the custom resource's status conditions.\n", k, k)
	}
	return b.String()
}

// fieldIconSize is the size of a package's icon, a PNG of the size OperatorHub's are.
const fieldIconSize = 9 << 10

// fieldBytes are n bytes as incompressible as an image's, the same every run for a name.
func fieldBytes(name string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	for sum := sha256.Sum256([]byte(name)); len(out) < n; sum = sha256.Sum256(sum[:]) {
		out = append(out, sum[:]...)
	}
	return out[:n]
}
