// Package synthcatalog writes a file-based catalog of small packages whose upgrade graphs are the
// tricky ones: a skipRange overlapping replaces, a skipped bundle in the middle of a channel, two
// channels sharing bundles, an open-ended skipRange, and upgrades that need a package a second
// catalog provides. Its bundles embed a minimal CSV that real OLM installs (one Deployment, no
// APIs, so several can be installed side by side), so the same catalog serves the offline tests
// of `catalog simulate` and the cross-check against OLM on the test bed.
package synthcatalog

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Entry is a channel entry by version; the bundle is <package>.v<version>.
type Entry struct {
	Version   string
	Replaces  string
	Skips     []string
	SkipRange string
	// Requires is a package the bundle needs, as olm.package.required: "PACKAGE RANGE".
	Requires string
}

// Package is one tricky graph.
type Package struct {
	Name           string
	DefaultChannel string
	Channels       map[string][]Entry
	// ChannelDeprecations are olm.deprecations notices by channel.
	ChannelDeprecations map[string]string
}

// Packages are the synthetic catalog's packages.
var Packages = []Package{
	{
		// 1.2.0 and 1.3.0 both reach back past the bundle they replace: from 1.0.0 OLM has
		// 1.1.0 (replaces) and 1.2.0 (skipRange) to choose from.
		Name: "synthetic-skiprange-overlap", DefaultChannel: "stable",
		Channels: map[string][]Entry{"stable": {
			{Version: "1.0.0"},
			{Version: "1.1.0", Replaces: "1.0.0"},
			{Version: "1.2.0", Replaces: "1.1.0", SkipRange: ">=1.0.0 <1.2.0"},
			{Version: "1.3.0", Replaces: "1.2.0", SkipRange: ">=1.1.0 <1.3.0"},
		}},
	},
	{
		// 1.1.0 was pulled: 1.2.0 skips it and replaces 1.0.0 in its stead. 1.1.0 still
		// replaces 1.0.0, which makes it a candidate from 1.0.0 that OLM must pass over.
		Name: "synthetic-skipped-middle", DefaultChannel: "stable",
		Channels: map[string][]Entry{"stable": {
			{Version: "1.0.0"},
			{Version: "1.1.0", Replaces: "1.0.0"},
			{Version: "1.2.0", Replaces: "1.0.0", Skips: []string{"1.1.0"}},
			{Version: "1.3.0", Replaces: "1.2.0"},
		}},
	},
	{
		// fast carries stable's bundles and more; stable is deprecated in favour of fast.
		Name: "synthetic-shared-channels", DefaultChannel: "stable",
		Channels: map[string][]Entry{
			"stable": {
				{Version: "1.0.0"},
				{Version: "1.1.0", Replaces: "1.0.0"},
			},
			"fast": {
				{Version: "1.0.0"},
				{Version: "1.1.0", Replaces: "1.0.0"},
				{Version: "1.2.0", Replaces: "1.1.0"},
				{Version: "2.0.0", Replaces: "1.2.0", SkipRange: ">=1.0.0 <2.0.0"},
			},
		},
		ChannelDeprecations: map[string]string{"stable": "stable gets no more updates: subscribe to fast."},
	},
	{
		// From 1.1.0 on it needs synthetic-dependency, which only the dependencies' catalog
		// carries; 1.2.0 needs its 2.0.0.
		Name: "synthetic-needs-dependency", DefaultChannel: "stable",
		Channels: map[string][]Entry{"stable": {
			{Version: "1.0.0"},
			{Version: "1.1.0", Replaces: "1.0.0", Requires: "synthetic-dependency >=1.1.0"},
			{Version: "1.2.0", Replaces: "1.1.0", Requires: "synthetic-dependency >=2.0.0"},
		}},
	},
	{
		// 1.1.0's skipRange is open-ended, as the field writes them, and so contains 1.1.0
		// itself: OLM's resolver offers the installed head as its own replacement, and OLM
		// keeps it.
		Name: "synthetic-open-skiprange", DefaultChannel: "stable",
		Channels: map[string][]Entry{"stable": {
			{Version: "1.0.0"},
			{Version: "1.1.0", Replaces: "1.0.0", SkipRange: ">=1.0.0"},
		}},
	},
}

// Loop is a package whose skips and skipRanges lead round a circle, which opm accepts (it rejects
// only a circle of replaces): 1.1.0 replaces 1.0.0, whose skipRange holds 1.1.0, so OLM v0
// would downgrade to 1.0.0 and upgrade again for good. It is not in Packages: OLM on the test bed
// would go round it for as long as the cross-check waited.
var Loop = Package{
	Name: "synthetic-loop", DefaultChannel: "stable",
	Channels: map[string][]Entry{"stable": {
		{Version: "1.0.0", SkipRange: ">=1.1.0 <1.2.0"},
		{Version: "1.1.0", Replaces: "1.0.0"},
	}},
}

// DependencyPackages are the packages of the dependencies' catalog, a second CatalogSource.
var DependencyPackages = []Package{{
	Name: "synthetic-dependency", DefaultChannel: "stable",
	Channels: map[string][]Entry{"stable": {
		{Version: "1.0.0"},
		{Version: "1.1.0", Replaces: "1.0.0"},
		{Version: "2.0.0", Replaces: "1.1.0"},
	}},
}}

// BundleName is the CSV name of a package's version.
func BundleName(pkg, version string) string { return pkg + ".v" + version }

// Config builds the catalog.
func Config() (*declcfg.DeclarativeConfig, error) { return ConfigOf(Packages) }

// ConfigOf builds a catalog of the packages.
func ConfigOf(packages []Package) (*declcfg.DeclarativeConfig, error) {
	cfg := &declcfg.DeclarativeConfig{}
	for _, p := range packages {
		cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: p.Name, DefaultChannel: p.DefaultChannel})
		versions := map[string][]property.Property{}
		for _, name := range sortedKeys(p.Channels) {
			ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: p.Name, Name: name}
			for _, e := range p.Channels[name] {
				ce := declcfg.ChannelEntry{Name: BundleName(p.Name, e.Version), SkipRange: e.SkipRange}
				if e.Replaces != "" {
					ce.Replaces = BundleName(p.Name, e.Replaces)
				}
				for _, s := range e.Skips {
					ce.Skips = append(ce.Skips, BundleName(p.Name, s))
				}
				ch.Entries = append(ch.Entries, ce)
				versions[e.Version] = nil
				if pkg, rng, ok := strings.Cut(e.Requires, " "); ok {
					versions[e.Version] = []property.Property{property.MustBuildPackageRequired(pkg, rng)}
				}
			}
			cfg.Channels = append(cfg.Channels, ch)
		}
		for _, v := range sortedKeys(versions) {
			b, err := bundle(p.Name, v, versions[v]...)
			if err != nil {
				return nil, err
			}
			cfg.Bundles = append(cfg.Bundles, *b)
		}
		if len(p.ChannelDeprecations) > 0 {
			d := declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: p.Name}
			for _, ch := range sortedKeys(p.ChannelDeprecations) {
				d.Entries = append(d.Entries, declcfg.DeprecationEntry{
					Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: ch},
					Message:   p.ChannelDeprecations[ch],
				})
			}
			cfg.Deprecations = append(cfg.Deprecations, d)
		}
	}
	return cfg, nil
}

// Write writes the catalog into dir as opm lays catalogs out (<package>/catalog.json).
func Write(dir string) error { return write(Packages, dir) }

// WriteDependencies writes the dependencies' catalog into dir.
func WriteDependencies(dir string) error { return write(DependencyPackages, dir) }

// WritePackages writes a catalog of the packages into dir.
func WritePackages(dir string, packages ...Package) error { return write(packages, dir) }

func write(packages []Package, dir string) error {
	cfg, err := ConfigOf(packages)
	if err != nil {
		return err
	}
	return declcfg.WriteFS(*cfg, dir, declcfg.WriteJSON, ".json")
}

// bundle is an offline bundle (no image) embedding the CSV, as `csi-olm catalog generate` writes
// the project's, with further properties such as the APIs it provides and requires.
func bundle(pkg, v string, props ...property.Property) (*declcfg.Bundle, error) {
	sv, err := semver.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("version %q of %s: %w", v, pkg, err)
	}
	name := BundleName(pkg, v)
	labels := map[string]string{"app": pkg}
	deployment := appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "operator", Image: "registry.invalid/" + pkg + ":v" + v,
			}}},
		},
	}
	csv := operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta:   metav1.TypeMeta{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: strings.TrimPrefix(pkg, "synthetic-"),
			Version:     version.OperatorVersion{Version: sv},
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{
				StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
					DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{Name: pkg, Spec: deployment}},
				},
			},
		},
	}
	raw, err := json.Marshal(csv)
	if err != nil {
		return nil, err
	}
	return &declcfg.Bundle{
		Schema: declcfg.SchemaBundle, Name: name, Package: pkg,
		Properties: append([]property.Property{property.MustBuildPackage(pkg, v), property.MustBuildBundleObject(raw)}, props...),
		CsvJSON:    string(raw), Objects: []string{string(raw)},
	}, nil
}

// sortedKeys orders versions and channel names; here they sort the same lexically and by semver.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
