package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := execute(t, "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Version      string            `json:"version"`
		GoVersion    string            `json:"goVersion"`
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, out)
	}
	if info.Version == "" || !strings.HasPrefix(info.GoVersion, "go") {
		t.Errorf("version info = %+v", info)
	}
	if _, err := execute(t, "version", "-o", "xml"); err == nil || !strings.Contains(err.Error(), `unknown output format "xml"`) {
		t.Errorf("version -o xml: err = %v", err)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, err := execute(t, "completion", shell)
		if err != nil {
			t.Fatalf("completion %s: %v", shell, err)
		}
		if !strings.Contains(out, "csi-olm") {
			t.Errorf("completion %s does not complete csi-olm", shell)
		}
	}
}

func TestVerbsAreWired(t *testing.T) {
	out, err := execute(t, "bundle", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"generate", "validate"} {
		if !strings.Contains(out, verb) {
			t.Errorf("bundle --help lacks %s:\n%s", verb, out)
		}
	}
	if _, err := execute(t, "bundle", "validate"); err == nil {
		t.Error("bundle validate without a directory succeeded")
	}
	// The committed bundles name release tags: fine for development, not for a release.
	if out, err := execute(t, "bundle", "validate", "--strict", "../../bundle/aws-efs-operator/4.11.0"); err != nil {
		t.Errorf("bundle validate on the committed head: %v\n%s", err, out)
	}
	out, err = execute(t, "bundle", "validate", "--release", "../../bundle/aws-efs-operator/4.11.0")
	if err == nil || !strings.Contains(out, `"quay.io/csi-olm/aws-efs-csi-driver-operator:v4.11.0" is not pinned by digest`) {
		t.Errorf("bundle validate --release on tags: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"release"},
		{"release", "--registry", "127.0.0.1:5000/csi-olm", "--mirror", "quay.io"},
		{"catalog", "images", "../../catalog/certified", "-o", "idms"},
	} {
		if _, err := execute(t, args...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}

// TestClusterChangingVerbsDefaultToDryRun keeps every verb that changes a cluster safe by default:
// it changes the cluster only with --confirm, as oc's pruning and migrating verbs do.
func TestClusterChangingVerbsDefaultToDryRun(t *testing.T) {
	root := newRoot()
	for _, path := range [][]string{
		{"migrate", "subscription"}, {"migrate", "cso"}, {"migrate", "olm-v1"}, {"efs", "release-finalizer"}, {"efs", "release-sharedvolumes"},
	} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatalf("%v: %v", path, err)
		}
		flag := cmd.Flags().Lookup("confirm")
		if flag == nil || flag.DefValue != "false" {
			t.Errorf("%v: --confirm must default to false, got %v", path, flag)
		}
		// The old spelling keeps its meaning.
		for _, tc := range []struct {
			args []string
			dry  bool
		}{{nil, true}, {[]string{"--confirm"}, false}, {[]string{"--confirm=false"}, true}, {[]string{"--dry-run=false"}, false}} {
			cmd, _, _ := newRoot().Find(path)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			if dry, _ := cmd.Flags().GetBool("dry-run"); dry != tc.dry {
				t.Errorf("%v %v: dry run %v, want %v", path, tc.args, dry, tc.dry)
			}
		}
	}
}

func TestMigrateRefusesAnUnknownDriverBeforeTouchingACluster(t *testing.T) {
	// No kubeconfig is needed: the driver is checked first.
	t.Setenv("KUBECONFIG", "/nonexistent")
	_, err := execute(t, "migrate", "cso", "--driver", "gce-pd")
	if err == nil || err.Error() != `unknown driver "gce-pd": use ebs or manila` {
		t.Errorf("err = %v", err)
	}
	if _, err := execute(t, "migrate", "cso"); err == nil || !strings.Contains(err.Error(), `required flag(s) "driver" not set`) {
		t.Errorf("without --driver: err = %v", err)
	}
	// The move to OLM v1 needs the ClusterCatalog it installs from, unless it goes back.
	if _, err := execute(t, "migrate", "olm-v1"); err == nil || !strings.HasPrefix(err.Error(), "--catalog is empty: name the ClusterCatalog OLM v1 installs aws-efs-operator from") {
		t.Errorf("migrate olm-v1 without --catalog: err = %v", err)
	}
}

// The catalog verbs' domain packages name their own terms; the command names the flags.
func TestCatalogErrorsNameTheFlags(t *testing.T) {
	// Trees of per-minor catalogs, and the newest minor's catalogs.
	const certifiedTree, communityTree = "../../catalog/certified", "../../catalog/community"
	const certified, community = certifiedTree + "/v4.11", communityTree + "/v4.11"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"catalog", "images", certifiedTree, "-o", "idms"}, "--mirror: the idms format needs the registry the cluster pulls from instead"},
		{[]string{"catalog", "images", certified, "-o", "imageset"}, "--catalog-image: the imageset format needs"},
		{[]string{"catalog", "images", certifiedTree, "-o", "imageset", "--catalog-image", "quay.io/csi-olm/certified-catalog:v4.11"}, "catalog " + certifiedTree + " is a tree of per-minor catalogs, each published in its own image"},
		{[]string{"catalog", "graph", certifiedTree, "-o", "svg"}, "--output-dir: the svg format writes files"},
		{[]string{"catalog", "validate", certified, "--community", communityTree}, "--community: " + communityTree + " is a tree of per-minor catalogs, but " + certified + " is one catalog"},
		{[]string{"catalog", "diff", communityTree, certifiedTree, "-o", "json"}, "--output: two trees of per-minor catalogs are reported as text"},
		{[]string{"catalog", "diff", communityTree, certified}, "is one catalog, but the other is a tree of per-minor catalogs"},
		{[]string{"catalog", "simulate", certifiedTree, "--all"}, "is a tree of per-minor catalogs (v4.5, v4.9, v4.10, v4.11): give the catalog of one minor, such as " + certifiedTree + "/v4.11"},
		{[]string{"catalog", "generate", "--bundles", "../../bundle", "--output-dir", t.TempDir(), "--bundle-image", "registry.example/{{.Package"}, "--bundle-image: template"},
		{[]string{"catalog", "validate", certified, "--bundles", "/nonexistent"}, "--bundles: stat /nonexistent"},
		{[]string{"catalog", "diff", communityTree + "/v4.5", certifiedTree + "/v4.5", "-o", "dot"}, "--package: a picture shows one package and"},
		{[]string{"catalog", "simulate", certified}, "at least one of the flags in the group [installed all from-cluster] is required"},
		{[]string{"catalog", "simulate", certified, "--all", "--installed", "x"}, "none of the others can be"},
		{[]string{"catalog", "simulate", certified, "--installed", "aws-efs-operator.v0.0.6"},
			`CSV "aws-efs-operator.v0.0.6" is not in catalog ../../catalog/certified/v4.11: name the catalog it was installed from with --installed-from`},
		{[]string{"catalog", "simulate", certified, "--installed", "aws-efs-csi-driver-operator.v4.11.0", "--channel", "fast"},
			`has no channel "fast" (channels: 4.10, 4.11, 4.9, stable): name one with --channel`},
		{[]string{"catalog", "simulate", certified, "--all", "--existing-operator", "cert-manager", "--with-catalog", community + ",priority=high"},
			"installed operator \"cert-manager\" is not PACKAGE@VERSION with a semver version\n  catalog \"" + community + ",priority=high\": \"priority=high\" is not priority=N"},
	} {
		if _, err := execute(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestExitCodes: every verb that reports findings exits 1 on them, and every verb exits 2 when it
// cannot do its job, so a pipeline can tell a breaking change from a typo. The findings are the
// committed catalogs read backwards (v4.11 then v4.10: heads lower, bundles gone; a tree whose
// v4.11 is the certified v4.9), the synthetic catalog without the one that provides its
// dependencies, and a catalog whose edges loop.
func TestExitCodes(t *testing.T) {
	const bundle, v410, v411 = "../../bundle/aws-efs-operator/4.11.0", "../../catalog/certified/v4.10", "../../catalog/certified/v4.11"
	synthetic, deps, tree, loop := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	if err := synthcatalog.Write(synthetic); err != nil {
		t.Fatal(err)
	}
	if err := synthcatalog.WritePackages(loop, synthcatalog.Loop); err != nil {
		t.Fatal(err)
	}
	if err := synthcatalog.WriteDependencies(deps); err != nil {
		t.Fatal(err)
	}
	for minor, from := range map[string]string{"v4.10": v410, "v4.11": "../../catalog/certified/v4.9"} {
		if err := os.CopyFS(filepath.Join(tree, minor), os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "catalog.json"), []byte(`{"schema": "olm.package", "name": "p", "defaultChannel": "absent"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"bundle", "validate", bundle}, exitcode.OK},
		{[]string{"bundle", "validate", "--release", bundle}, exitcode.Findings},
		{[]string{"bundle", "validate", t.TempDir()}, exitcode.Failure},
		{[]string{"bundle", "validate", "--no-such-flag", bundle}, exitcode.Failure},
		{[]string{"catalog", "validate", v411}, exitcode.OK},
		{[]string{"catalog", "validate", broken}, exitcode.Findings},
		{[]string{"catalog", "validate", filepath.Join(broken, "absent")}, exitcode.Failure},
		{[]string{"catalog", "diff", "--breaking", v410, v411}, exitcode.OK},
		{[]string{"catalog", "diff", "--breaking", v411, v410}, exitcode.Findings},
		{[]string{"catalog", "diff", "--breaking", "--olm", "v1", v411, v410}, exitcode.Findings},
		{[]string{"catalog", "diff", "--breaking", v411}, exitcode.Failure},
		{[]string{"catalog", "simulate", "--all", synthetic, "--with-catalog", deps, "--existing-operator", "x"}, exitcode.Failure},
		{[]string{"catalog", "simulate", "--all", v411}, exitcode.OK},
		// Every start of --all runs, so what it requires is met: only the loop is a finding.
		{[]string{"catalog", "simulate", "--all", synthetic}, exitcode.OK},
		{[]string{"catalog", "simulate", "--all", loop}, exitcode.Findings},
		{[]string{"catalog", "simulate", synthetic, "--installed", synthcatalog.BundleName("synthetic-needs-dependency", "1.1.0")}, exitcode.Findings},
		{[]string{"catalog", "cluster-upgrade", "../../catalog/certified"}, exitcode.OK},
		{[]string{"catalog", "cluster-upgrade", tree}, exitcode.Findings},
		{[]string{"catalog", "cluster-upgrade", v411}, exitcode.Failure},
		{[]string{"efs", "check-sharedvolumes", "--kubeconfig", filepath.Join(broken, "absent")}, exitcode.Failure},
		{[]string{"catalog", "graph", "-o", "xml", "--output-dir", t.TempDir(), v411}, exitcode.Failure},
		{[]string{"no-such-verb"}, exitcode.Failure},
	} {
		out, err := execute(t, tc.args...)
		if got := exitcode.Of(err); got != tc.want {
			t.Errorf("csi-olm %s: exit %d (%v), want %d\n%s", strings.Join(tc.args, " "), got, err, tc.want, out)
		}
	}
}

// release without the binaries its catalog images carry names both flags, before pushing anything.
func TestReleaseNamesWhatItLacks(t *testing.T) {
	_, err := execute(t, "release", "--registry", "127.0.0.1:1/csi-olm", "--opm", "", "--grpc-health-probe", "")
	if exitcode.Of(err) != exitcode.Failure || err == nil || !strings.Contains(err.Error(), "--opm: no opm") || !strings.Contains(err.Error(), "--grpc-health-probe: no grpc_health_probe") {
		t.Errorf("release without opm and grpc_health_probe: %v, want both named, exit 2", err)
	}
}

// Both validate verbs report as data with -o json and -o yaml: opm validate's shape for a
// catalog (passed, error.message), operator-sdk's for bundles (passed, outputs), each with every
// problem, and the same exit status as the text.
func TestValidateVerbsReportAsData(t *testing.T) {
	const bundle, catalog = "../../bundle/aws-efs-operator/4.11.0", "../../catalog/certified/v4.11"
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "catalog.json"), []byte(`{"schema": "olm.package", "name": "p", "defaultChannel": "absent"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	type problem struct {
		Level, Message string
	}
	var catalogReport struct {
		Passed bool
		Error  *struct{ Message string }
		// Catalogs' problems.
		Catalogs []struct {
			Catalog  string
			Errors   int
			Problems []problem
		}
	}
	var bundleReport struct {
		Passed  bool
		Outputs []struct{ Type, Message string }
		Bundles []struct {
			Bundle   string
			Problems []problem
		}
	}
	for _, tc := range []struct {
		args   []string
		report any
		exit   int
		check  func() string
	}{
		{[]string{"catalog", "validate", catalog, "-o", "json"}, &catalogReport, exitcode.OK, func() string {
			if !catalogReport.Passed || catalogReport.Error != nil || len(catalogReport.Catalogs) != 1 || catalogReport.Catalogs[0].Catalog != catalog {
				return "want passed, no error, the one catalog"
			}
			return ""
		}},
		{[]string{"catalog", "validate", broken, "-o", "yaml"}, &catalogReport, exitcode.Findings, func() string {
			if catalogReport.Passed || catalogReport.Error == nil || !strings.Contains(catalogReport.Error.Message, "is invalid") ||
				catalogReport.Catalogs[0].Errors == 0 || len(catalogReport.Catalogs[0].Problems) != catalogReport.Catalogs[0].Errors {
				return "want not passed, the error, and each problem"
			}
			return ""
		}},
		{[]string{"bundle", "validate", bundle, "-o", "json"}, &bundleReport, exitcode.OK, func() string {
			if !bundleReport.Passed || len(bundleReport.Bundles) != 1 || bundleReport.Bundles[0].Bundle != bundle {
				return "want passed and the one bundle"
			}
			return ""
		}},
		{[]string{"bundle", "validate", "--release", bundle, "-o", "yaml"}, &bundleReport, exitcode.Findings, func() string {
			if bundleReport.Passed || len(bundleReport.Outputs) == 0 || bundleReport.Outputs[0].Type != "error" || !strings.Contains(bundleReport.Outputs[0].Message, "is not pinned by digest") {
				return "want not passed, and the unpinned images as error outputs"
			}
			return ""
		}},
	} {
		out, err := execute(t, tc.args...)
		if got := exitcode.Of(err); got != tc.exit {
			t.Errorf("%v: exit %d (%v), want %d", tc.args, got, err, tc.exit)
		}
		// execute writes stderr into the same buffer: the report is what comes before cobra's error line.
		data, _, _ := strings.Cut(out, "Error: ")
		if err := yaml.Unmarshal([]byte(data), tc.report); err != nil {
			t.Fatalf("%v: the output is not a report: %v\n%s", tc.args, err, out)
		}
		if why := tc.check(); why != "" {
			t.Errorf("%v: %s, got:\n%s", tc.args, why, out)
		}
	}
}

// Long work tells stderr how far it has come, and --quiet silences that alone.
func TestProgressOnStderrAndQuiet(t *testing.T) {
	// A chain of 30 releases: 30 starts, each one step from the head.
	chain := synthcatalog.Package{Name: "chain", DefaultChannel: "stable", Channels: map[string][]synthcatalog.Entry{}}
	for i := range 30 {
		e := synthcatalog.Entry{Version: fmt.Sprintf("1.0.%d", i)}
		if i > 0 {
			e.Replaces = fmt.Sprintf("1.0.%d", i-1)
		}
		chain.Channels["stable"] = append(chain.Channels["stable"], e)
	}
	cfg, err := synthcatalog.ConfigOf([]synthcatalog.Package{chain})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := declcfg.WriteFS(*cfg, dir, declcfg.WriteJSON, ".json"); err != nil {
		t.Fatal(err)
	}
	for _, quiet := range []bool{false, true} {
		root := newRoot()
		var stdout, stderr bytes.Buffer
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		args := []string{"catalog", "simulate", "--all", dir, "-o", "json"}
		if quiet {
			args = append(args, "--quiet")
		}
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		progress := strings.Count(stderr.String(), "simulated ")
		switch {
		case quiet && progress != 0:
			t.Errorf("--quiet printed progress:\n%s", stderr.String())
		case !quiet && (progress < 10 || !strings.Contains(stderr.String(), "simulated 0 of ")):
			t.Errorf("progress on stderr:\n%s", stderr.String())
		}
		var report map[string]any
		if err := json.Unmarshal(stdout.Bytes(), &report); err != nil || len(report) == 0 {
			t.Errorf("stdout is not the report alone: %v", err)
		}
	}
}
