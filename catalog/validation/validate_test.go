package validation_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/validation"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

func run(v *validation.Validate) (string, error) {
	var out bytes.Buffer
	v.Out = &out
	err := v.Run(context.Background())
	return out.String(), err
}

func TestCommittedCatalogsValidate(t *testing.T) {
	for _, v := range []*validation.Validate{
		{Dir: "../community", Bundles: "../../bundle"},
		{Dir: "../certified", Community: "../community", Bundles: "../../bundle"},
	} {
		out, err := run(v)
		if err != nil || !strings.Contains(out, "0 errors, 0 warnings") {
			t.Errorf("%s: %v\n%s", v.Dir, err, out)
		}
	}
	// A tree is validated minor by minor, each certified catalog with the community catalog of
	// its minor.
	out, err := run(&validation.Validate{Dir: "../certified", Community: "../community"})
	for _, want := range []string{"../certified/v4.5: 2 packages", "../certified/v4.9: 1 packages", "../certified/v4.11: 1 packages"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("certified: output lacks %q: %v\n%s", want, err, out)
		}
	}
}

// A minor's catalog holds only bundles a cluster at that minor runs: OLM would not install one
// whose minKubeVersion is newer than the minor's Kubernetes, and one whose maxOpenShiftVersion is
// below the minor holds the cluster where it is.
func TestMinorCatalogsHoldWhatTheirClustersRun(t *testing.T) {
	root := t.TempDir()
	copyDir(t, "../certified/v4.9", filepath.Join(root, "v4.11"))  // max 4.10
	copyDir(t, "../certified/v4.11", filepath.Join(root, "v4.10")) // minKubeVersion 1.24.0
	copyDir(t, "../certified/v4.11", filepath.Join(root, "v4.12")) // runs there: max 4.12, Kubernetes 1.25
	out, err := run(&validation.Validate{Dir: root})
	if err == nil {
		t.Fatalf("catalogs of bundles for other minors validated:\n%s", out)
	}
	for _, want := range []string{
		"bundle aws-efs-csi-driver-operator.v4.9.0: olm.maxOpenShiftVersion is 4.10, below the v4.11 index it is in",
		"bundle aws-efs-csi-driver-operator.v4.11.0: minKubeVersion 1.24.0 is newer than OpenShift 4.10's Kubernetes 1.23: OLM would not install the bundle on any 4.10 release, from the v4.10 index",
		root + "/v4.12: 1 packages, 4 channels, 1 bundles: 0 errors",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// OpenShift's z-streams move its Kubernetes up patch by patch: a bundle only the first releases
// of the minor cannot install is a warning naming the first release that can, and only one that
// needs a later Kubernetes minor is an error.
func TestMinKubeVersionAgainstTheMinorsReleases(t *testing.T) {
	root := t.TempDir()
	cfg, err := synthcatalog.ConfigOf([]synthcatalog.Package{{Name: "z", DefaultChannel: "stable", Channels: map[string][]synthcatalog.Entry{"stable": {
		{Version: "1.0.0"}, {Version: "1.1.0", Replaces: "1.0.0"}, {Version: "1.2.0", Replaces: "1.1.0"},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	minKube := map[string]string{"z.v1.0.0": "1.33.5", "z.v1.1.0": "1.33.6", "z.v1.2.0": "1.34.0"}
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		// A 4.20 index carries a CSV as olm.csv.metadata, not as an embedded object: the bundle's
		// manifests are in its image.
		b.Image = "quay.io/example/" + b.Name
		b.Properties = slices.DeleteFunc(b.Properties, func(p property.Property) bool { return p.Type == property.TypeBundleObject })
		b.Properties = append(b.Properties, property.MustBuildCSVMetadata(operatorsv1alpha1.ClusterServiceVersion{
			Spec: operatorsv1alpha1.ClusterServiceVersionSpec{MinKubeVersion: minKube[b.Name]},
		}))
	}
	if err := declcfg.WriteFS(*cfg, filepath.Join(root, "v4.20"), declcfg.WriteYAML, ".yaml"); err != nil {
		t.Fatal(err)
	}
	out, err := run(&validation.Validate{Dir: root})
	if err == nil {
		t.Fatalf("a bundle no 4.20 release installs validated:\n%s", out)
	}
	for _, want := range []string{
		"z/catalog.yaml: warning: [kube-version] package z, bundle z.v1.1.0: minKubeVersion 1.33.6 is newer than the Kubernetes of OpenShift 4.20's first releases: 4.20.16 (Kubernetes 1.33.8) is the first release known to ship it",
		"z/catalog.yaml: error: [kube-version] package z, bundle z.v1.2.0: minKubeVersion 1.34.0 is newer than OpenShift 4.20's Kubernetes 1.33",
		"1 errors, 1 warnings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "z.v1.0.0") {
		t.Errorf("z.v1.0.0 wants what 4.20's first known release ships, and is reported:\n%s", out)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// Every problem is printed with its file, and errors make the verb fail.
func TestValidateReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a/catalog.yaml": "schema: olm.package\nname: a\ndefaultChannel: stable\n",
		"b/catalog.yaml": "schema: olm.package\nname: b\n  defaultChannel: [x\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(&validation.Validate{Dir: dir})
	if err == nil {
		t.Fatalf("a broken catalog validated:\n%s", out)
	}
	for _, want := range []string{dir + "/a/catalog.yaml: error: [opm] package a", dir + "/a/catalog.yaml: error: [default-channel] package a: default channel \"stable\" does not exist", dir + "/b/catalog.yaml: error: [load] not valid YAML or JSON", "errors"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateRejectsBadPaths(t *testing.T) {
	for _, v := range []*validation.Validate{
		{Dir: "../nowhere"},
		{Dir: "validation.go"},
		{Dir: "../certified", Community: "../nowhere"},
		{Dir: "../certified", Bundles: "../nowhere"},
	} {
		if _, err := run(v); err == nil {
			t.Errorf("%+v: no error", v)
		}
	}
}
