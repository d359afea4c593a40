package validation

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The rules' names: stable, as settings (--rule NAME=LEVEL), CI configurations and the json
// output name them.
const (
	RuleLoad                    = "load"
	RuleEmptyDirectory          = "empty-directory"
	RuleOPM                     = "opm"
	RuleSchema                  = "schema"
	RuleDefaultChannel          = "default-channel"
	RuleChannelHead             = "channel-head"
	RuleSkipRange               = "skiprange"
	RuleReplacesAvailable       = "replaces-available"
	RuleReplacesLoop            = "replaces-loop"
	RuleEdgeLoop                = "edge-loop"
	RuleStranded                = "stranded"
	RuleSkippedPath             = "skipped-path"
	RuleSkipRangeWithoutReplace = "skiprange-without-replaces"
	RuleDeprecation             = "deprecation"
	RuleCommunityUpgrade        = "community-upgrade"
	RuleBundleObjects           = "bundle-objects"
	RuleKubeVersion             = "kube-version"
	RuleMaxOpenShiftVersion     = "max-openshift-version"
	RuleBundleMetadataFormat    = "bundle-metadata-format"
	RuleBundleImageDigest       = "bundle-image-digest"
	RuleBundleImageRegistry     = "bundle-image-registry"
	RuleNetworkPolicy           = "network-policy"
)

// Rule is one rule of catalog validate.
type Rule struct {
	Name string
	// DefaultOff rules run only when a setting turns them on: checks of one pipeline's policy
	// that catalogs of the field's other pipelines break by design.
	DefaultOff bool
	// Fixed rules cannot be turned off or down: a file that cannot be read, a catalog opm
	// rejects.
	Fixed bool
	// Needs says what the rule needs beyond the catalog, "" for nothing.
	Needs string
	// Field names the check of the field's catalog pipelines that the rule matches, "" for a
	// check of csi-olm's own.
	Field string
	// Doc says what the rule finds.
	Doc string
}

// Rules are every rule, in the order the help lists them; docs/catalogs.md#rules says more.
var Rules = []Rule{
	{Name: RuleLoad, Fixed: true, Doc: "every file of the catalog reads as YAML or JSON objects with a schema"},
	{Name: RuleEmptyDirectory, Field: "Konflux validate-fbc (no empty directory)", Doc: "no top directory of the catalog is empty"},
	{Name: RuleOPM, Fixed: true, Field: "opm validate (both operator pipelines, Konflux validate-fbc)", Doc: "opm validate's rules, package by package"},
	{Name: RuleSchema, Field: "Konflux validate-fbc (a package at least)", Doc: "the catalog has a package; no object has a schema OLM does not read"},
	{Name: RuleDefaultChannel, Doc: "every package names a default channel that exists and has one head"},
	{Name: RuleChannelHead, Doc: "every channel has exactly one head"},
	{Name: RuleSkipRange, Doc: "every skipRange parses"},
	{Name: RuleReplacesAvailable, Field: "operator-pipelines check_replaces_availability", Doc: "every replaces and skips names a bundle of the catalog (with --community, of either catalog)"},
	{Name: RuleReplacesLoop, Field: "operator-pipelines check_upgrade_graph_loop (replaces)", Doc: "no replaces chain loops"},
	{Name: RuleEdgeLoop, Field: "operator-pipelines check_upgrade_graph_loop (skips, skipRange)", Doc: "no bundles lead round to each other through skips and skipRanges (a warning: catalog simulate says whether OLM goes round)"},
	{Name: RuleStranded, Field: "operator-pipelines check_dangling_bundles", Doc: "every bundle has an upgrade path to its channel head"},
	{Name: RuleSkippedPath, Doc: "no bundle's only paths to the head go through a bundle that another skips (OLM never upgrades to one)"},
	{Name: RuleSkipRangeWithoutReplace, Field: "operator-pipelines check_pruned_graph", Doc: "no bundle of a channel of several has a skipRange without replaces, which prunes the graph"},
	{Name: RuleDeprecation, Doc: "olm.deprecations entries name what exists and have a message"},
	{Name: RuleCommunityUpgrade, Needs: "--community", Doc: "each community channel exists here, with a newer head that upgrades every community version in one step"},
	{Name: RuleBundleObjects, Needs: "--bundles", Doc: "embedded bundle objects are those of the bundle directories"},
	{Name: RuleKubeVersion, Needs: "a per-minor tree", Field: "operator-pipelines check_api_version_constraints", Doc: "some release of the minor runs each bundle's minKubeVersion (a warning when only later z-streams do)"},
	{Name: RuleMaxOpenShiftVersion, Needs: "a per-minor tree", Doc: "no bundle's olm.maxOpenShiftVersion is below its index's minor, or unreadable"},
	{Name: RuleBundleMetadataFormat, Needs: "a per-minor tree", Field: "operator-pipelines check_olm_bundle_object_in_fbc; Konflux validate-fbc", Doc: "from v4.17 on, no bundle has olm.bundle.object (warnings where Konflux alone differs: one olm.csv.metadata from v4.17 on, none before)"},
	{Name: RuleBundleImageDigest, DefaultOff: true, Field: "Konflux validate-fbc", Doc: "every bundle image is pinned by digest"},
	{Name: RuleBundleImageRegistry, Needs: "--allowed-registry", Field: "operator-pipelines check_bundle_images_in_fbc; Konflux validate-fbc", Doc: "every bundle image is under an allowed registry prefix"},
	{Name: RuleNetworkPolicy, DefaultOff: true, Field: "operator-pipelines check_network_policy_presence", Doc: "no embedded bundle object is a NetworkPolicy (the pipelines refuse one; OLM installs it)"},
}

// Setting is what a user makes of a rule.
type Setting string

const (
	// On runs the rule at its own levels (turns on a rule that is off by default).
	On Setting = "on"
	// Off does not report the rule's problems.
	Off Setting = "off"
	// AsWarning reports the rule's errors as warnings.
	AsWarning Setting = "warning"
	// AsError reports the rule's warnings as errors.
	AsError Setting = "error"
)

var allSettings = []Setting{On, Off, AsWarning, AsError}

// RuleNamed is the rule called name.
func RuleNamed(name string) (Rule, bool) {
	i := slices.IndexFunc(Rules, func(r Rule) bool { return r.Name == name })
	if i < 0 {
		return Rule{}, false
	}
	return Rules[i], true
}

// ParseSettings reads NAME=SETTING items (--rule) and reports every item that is wrong.
func ParseSettings(items []string) (map[string]Setting, error) {
	out := map[string]Setting{}
	var errs []error
	for _, item := range items {
		name, value, ok := strings.Cut(item, "=")
		rule, known := RuleNamed(name)
		s := Setting(value)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%q is not NAME=SETTING (settings: %s)", item, settingNames()))
		case !known:
			errs = append(errs, fmt.Errorf("%q: no rule %q (rules: %s)", item, name, ruleNames()))
		case !slices.Contains(allSettings, s):
			errs = append(errs, fmt.Errorf("%q: no setting %q (settings: %s)", item, value, settingNames()))
		case rule.Fixed && (s == Off || s == AsWarning):
			errs = append(errs, fmt.Errorf("%q: rule %s cannot be turned off or down: what it finds, OLM or opm refuses", item, name))
		default:
			if prev, twice := out[name]; twice && prev != s {
				errs = append(errs, fmt.Errorf("%q: rule %s is set to %s already", item, name, prev))
				continue
			}
			out[name] = s
		}
	}
	return out, errors.Join(errs...)
}

func ruleNames() string {
	names := make([]string, len(Rules))
	for i, r := range Rules {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

func settingNames() string {
	names := make([]string, len(allSettings))
	for i, s := range allSettings {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// enabled reports whether the rule called name runs under settings.
func enabled(name string, settings map[string]Setting) bool {
	rule, _ := RuleNamed(name)
	switch settings[name] {
	case Off:
		return false
	case "":
		return !rule.DefaultOff
	}
	return true
}

// applySettings leaves out the problems of rules that are off and sets the level of those a
// setting moves up or down.
func applySettings(problems []Problem, settings map[string]Setting) []Problem {
	out := problems[:0]
	for _, p := range problems {
		if !enabled(p.Rule, settings) {
			continue
		}
		switch settings[p.Rule] {
		case AsWarning:
			p.Level = Warning
		case AsError:
			p.Level = Error
		}
		out = append(out, p)
	}
	return out
}

// RulesHelp lists the rules for the verb's help.
func RulesHelp() string {
	var b strings.Builder
	for _, r := range Rules {
		var notes []string
		if r.DefaultOff {
			notes = append(notes, "off unless turned on")
		}
		if r.Fixed {
			notes = append(notes, "always on")
		}
		if r.Needs != "" {
			notes = append(notes, "needs "+r.Needs)
		}
		if r.Field != "" {
			notes = append(notes, "the field's "+r.Field)
		}
		fmt.Fprintf(&b, "  %-27s %s", r.Name, r.Doc)
		if len(notes) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(notes, "; "))
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
