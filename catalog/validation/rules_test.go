package validation_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/internal/openshift"
)

// TestRules breaks each of the field's rules on a minimal catalog (demo, edited) and checks the
// rule, and only it among them, reports it at its level; and that a catalog that keeps a rule
// gets none of its problems.
func TestRules(t *testing.T) {
	edit := func(pairs ...string) func(string) string {
		return func(s string) string {
			for i := 0; i < len(pairs); i += 2 {
				if !strings.Contains(s, pairs[i]) {
					t.Fatalf("fixture lacks %q", pairs[i])
				}
				s = strings.Replace(s, pairs[i], pairs[i+1], 1)
			}
			return s
		}
	}
	minor := func(m int) *openshift.Minor { return &openshift.Minor{Major: 4, Minor: m} }
	withProperty := func(typ, value string) func(string) string {
		return edit("    value: {packageName: demo, version: 1.2.0}\n",
			"    value: {packageName: demo, version: 1.2.0}\n  - type: "+typ+"\n    value: "+value+"\n")
	}
	networkPolicy, err := json.Marshal(map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": map[string]any{"name": "deny"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		edit    func(string) string
		opts    validation.Options
		rule    string
		level   validation.Level
		message string // "" when the rule must find nothing
	}{
		{
			name: "skipRange without replaces in a channel of several",
			edit: edit("    replaces: demo.v1.1.0\n", "    skips: [demo.v1.1.0]\n"),
			rule: validation.RuleSkipRangeWithoutReplace, level: validation.Warning,
			message: `bundle demo.v1.2.0: has skipRange ">=1.0.0 <1.2.0" and no replaces: the replaces chain ends at it`,
		},
		{
			name: "skipRange with replaces",
			rule: validation.RuleSkipRangeWithoutReplace,
		},
		{
			name: "skips leading back round",
			edit: edit("  - name: demo.v1.0.0\n", "  - name: demo.v1.0.0\n    skips: [demo.v1.1.0]\n"),
			rule: validation.RuleEdgeLoop, level: validation.Warning,
			message: "bundles demo.v1.0.0, demo.v1.1.0 lead round to each other: demo.v1.0.0 -> demo.v1.1.0 (replaces), demo.v1.1.0 -> demo.v1.0.0 (skips)",
		},
		{
			name: "a skipRange that holds its own version is no loop",
			edit: edit(`skipRange: ">=1.0.0 <1.2.0"`, `skipRange: ">=1.0.0"`),
			rule: validation.RuleEdgeLoop,
		},
		{
			name: "olm.bundle.object in a 4.17 index",
			edit: withProperty("olm.bundle.object", "{data: e30=}"),
			opts: validation.Options{Minor: minor(17)},
			rule: validation.RuleBundleMetadataFormat, level: validation.Error,
			message: "bundle demo.v1.2.0: has 1 olm.bundle.object properties: the v4.17 index",
		},
		{
			name: "no olm.csv.metadata in a 4.17 index",
			opts: validation.Options{Minor: minor(17)},
			rule: validation.RuleBundleMetadataFormat, level: validation.Warning,
			message: "bundle demo.v1.0.0: has 0 olm.csv.metadata properties, not one",
		},
		{
			name: "olm.csv.metadata in a 4.16 index",
			edit: withProperty("olm.csv.metadata", "{}"),
			opts: validation.Options{Minor: minor(16)},
			rule: validation.RuleBundleMetadataFormat, level: validation.Warning,
			message: "bundle demo.v1.2.0: has an olm.csv.metadata property: Konflux wants none in indexes before v4.17",
		},
		{
			name: "images by tag, the digest rule turned on",
			opts: validation.Options{Settings: map[string]validation.Setting{validation.RuleBundleImageDigest: validation.On}},
			rule: validation.RuleBundleImageDigest, level: validation.Error,
			message: "bundle demo.v1.0.0: image quay.io/demo/bundle:v1.0.0 is not pinned by digest",
		},
		{
			name: "images by tag, the digest rule off by default",
			rule: validation.RuleBundleImageDigest,
		},
		{
			name: "images under another registry",
			opts: validation.Options{AllowedRegistries: []string{"registry.example/", "quay.io/other/"}},
			rule: validation.RuleBundleImageRegistry, level: validation.Error,
			message: "image quay.io/demo/bundle:v1.0.0 is under none of the allowed registries (registry.example/, quay.io/other/)",
		},
		{
			name: "images under an allowed registry",
			opts: validation.Options{AllowedRegistries: []string{"quay.io/demo/"}},
			rule: validation.RuleBundleImageRegistry,
		},
		{
			name: "an embedded NetworkPolicy, the rule turned on",
			edit: withProperty("olm.bundle.object", "{data: "+base64.StdEncoding.EncodeToString(networkPolicy)+"}"),
			opts: validation.Options{Settings: map[string]validation.Setting{validation.RuleNetworkPolicy: validation.On}},
			rule: validation.RuleNetworkPolicy, level: validation.Error,
			message: "bundle demo.v1.2.0: embeds NetworkPolicy/deny, which the operator pipelines refuse",
		},
		{
			name: "an embedded NetworkPolicy, the rule off by default",
			edit: withProperty("olm.bundle.object", "{data: "+base64.StdEncoding.EncodeToString(networkPolicy)+"}"),
			rule: validation.RuleNetworkPolicy,
		},
		{
			name: "a rule's warnings made errors",
			edit: edit("    replaces: demo.v1.1.0\n", "    skips: [demo.v1.1.0]\n"),
			opts: validation.Options{Settings: map[string]validation.Setting{validation.RuleSkipRangeWithoutReplace: validation.AsError}},
			rule: validation.RuleSkipRangeWithoutReplace, level: validation.Error,
			message: "has skipRange",
		},
		{
			name: "a rule turned off",
			edit: edit("    replaces: demo.v1.1.0\n", "    skips: [demo.v1.1.0]\n"),
			opts: validation.Options{Settings: map[string]validation.Setting{validation.RuleSkipRangeWithoutReplace: validation.Off}},
			rule: validation.RuleSkipRangeWithoutReplace,
		},
		{
			name: "a rule's errors made warnings",
			edit: withProperty("olm.bundle.object", "{data: e30=}"),
			opts: validation.Options{Minor: minor(17), Settings: map[string]validation.Setting{validation.RuleBundleMetadataFormat: validation.AsWarning}},
			rule: validation.RuleBundleMetadataFormat, level: validation.Warning,
			message: "has 1 olm.bundle.object properties",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			content := demo
			if tc.edit != nil {
				content = tc.edit(content)
			}
			c, problems := load(t, map[string]string{"demo/catalog.yaml": content})
			if len(problems) > 0 {
				t.Fatalf("the fixture does not load:\n%s", list(problems))
			}
			var found []validation.Problem
			for _, p := range validation.Check(c, tc.opts) {
				if _, known := validation.RuleNamed(p.Rule); !known {
					t.Errorf("a problem of no rule: %s", p)
				}
				if p.Rule == tc.rule {
					found = append(found, p)
				}
			}
			if tc.message == "" {
				if len(found) > 0 {
					t.Fatalf("rule %s found:\n%s", tc.rule, list(found))
				}
				return
			}
			if !slices.ContainsFunc(found, func(p validation.Problem) bool {
				return p.Level == tc.level && strings.Contains(p.String(), "["+tc.rule+"] ") && strings.Contains(p.Message+p.String(), tc.message)
			}) {
				t.Fatalf("no %s of rule %s containing %q; found:\n%s", tc.level, tc.rule, tc.message, list(found))
			}
		})
	}
}

// TestParseSettings: every wrong item is reported at once, and rules OLM or opm decide cannot be
// turned off or down.
func TestParseSettings(t *testing.T) {
	got, err := validation.ParseSettings([]string{"edge-loop=off", "bundle-image-digest=error", "stranded=warning", "kube-version=on"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]validation.Setting{"edge-loop": validation.Off, "bundle-image-digest": validation.AsError, "stranded": validation.AsWarning, "kube-version": validation.On}
	if len(got) != len(want) {
		t.Fatalf("settings %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("setting of %s is %q, want %q", k, got[k], v)
		}
	}
	_, err = validation.ParseSettings([]string{"edge-loop", "no-such-rule=off", "stranded=loud", "opm=off", "load=warning", "opm=error", "edge-loop=off", "edge-loop=error"})
	if err == nil {
		t.Fatal("bad settings accepted")
	}
	for _, part := range []string{
		`"edge-loop" is not NAME=SETTING`,
		`"no-such-rule=off": no rule "no-such-rule" (rules: load, empty-directory, opm,`,
		`"stranded=loud": no setting "loud" (settings: on, off, warning, error)`,
		`"opm=off": rule opm cannot be turned off or down`,
		`"load=warning": rule load cannot be turned off or down`,
		`"edge-loop=error": rule edge-loop is set to off already`,
	} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the error does not say %q:\n%v", part, err)
		}
	}
	if strings.Contains(err.Error(), `"opm=error"`) {
		t.Errorf("opm=error, a fixed rule kept at error, is refused:\n%v", err)
	}
}

// TestEveryRuleIsListed: the help lists each rule once, with what it finds.
func TestEveryRuleIsListed(t *testing.T) {
	help := validation.RulesHelp()
	listed := map[string]int{}
	for _, line := range strings.Split(help, "\n") {
		listed[strings.Fields(line)[0]]++
	}
	for _, r := range validation.Rules {
		if listed[r.Name] != 1 {
			t.Errorf("the help lists rule %s %d times:\n%s", r.Name, listed[r.Name], help)
		}
		if r.Doc == "" {
			t.Errorf("rule %s says nothing of what it finds", r.Name)
		}
	}
}

// TestEmptyDirectory: a package directory left empty is found, and a setting moves it.
func TestEmptyDirectory(t *testing.T) {
	for _, tc := range []struct {
		rules []string
		want  string
	}{
		{nil, "warning: [empty-directory]"},
		{[]string{"empty-directory=error"}, "error: [empty-directory]"},
		{[]string{"empty-directory=off"}, ""},
	} {
		dir := t.TempDir()
		for _, d := range []string{"demo", "gone/sub"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "demo", "catalog.yaml"), []byte(demo), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := run(&validation.Validate{Dir: dir, Rules: tc.rules})
		switch {
		case tc.want == "" && strings.Contains(out, "empty-directory"):
			t.Errorf("rules %v: the empty directory is reported:\n%s", tc.rules, out)
		case tc.want != "" && !strings.Contains(out, dir+"/gone: "+tc.want+" the directory holds no file"):
			t.Errorf("rules %v: output lacks %q for %s/gone:\n%s", tc.rules, tc.want, dir, out)
		}
	}
}
