package efsdriver_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/bundle/drivers/efsdriver"
	"github.com/csi-olm/csi-olm/bundle/testmanifest"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// The committed testing/manifest.yaml is this package's golden file.
var update = flag.Bool("update", false, "rewrite the committed test manifest (as `make bundle` does)")

func TestTestManifestIsCurrent(t *testing.T) {
	got, err := efsdriver.TestManifest().YAML()
	if err != nil {
		t.Fatal(err)
	}
	testutil.CheckGolden(t, ".", map[string]string{efsdriver.TestManifestFile: string(got)}, *update,
		"run `make bundle` or `go test ./bundle/drivers/efsdriver -run TestTestManifestIsCurrent -update`")
}

// checkManifest runs storage-manifest-check on content, written to a file in dir, and returns
// whether it passed and what it printed.
func checkManifest(t *testing.T, checker, dir, content string) (bool, string) {
	t.Helper()
	file := filepath.Join(dir, "manifest.yaml")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(checker, file).CombinedOutput()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatalf("running %s: %v", checker, err)
	}
	return err == nil, string(out)
}

// TestTestManifestPassesUpstreamLoader: the shipped manifest loads with the upstream loader of
// k8s.io/kubernetes (the version hack/tools/kube/go.mod pins) and passes the strict checks it
// lacks; every Capability constant is a capability upstream knows.
func TestTestManifestPassesUpstreamLoader(t *testing.T) {
	checker := testutil.StorageManifestCheck(t)
	out, err := exec.Command(checker, efsdriver.TestManifestFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), efsdriver.TestManifestFile+": ok") {
		t.Fatalf("storage-manifest-check %s: %v\n%s", efsdriver.TestManifestFile, err, out)
	}

	every := efsdriver.TestManifest()
	every.DriverInfo.Capabilities = map[testmanifest.Capability]bool{}
	for _, c := range testmanifest.Capabilities() {
		every.DriverInfo.Capabilities[c] = false
	}
	raw, err := every.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if ok, out := checkManifest(t, checker, t.TempDir(), string(raw)); !ok {
		t.Errorf("a manifest with every testmanifest.Capability fails the check:\n%s", out)
	}
}

// TestStorageManifestCheckRejectsTypos: variants of the shipped manifest with one mistake each,
// most of which the upstream loader alone accepts, fail the check with a message naming the
// mistake.
func TestStorageManifestCheckRejectsTypos(t *testing.T) {
	checker := testutil.StorageManifestCheck(t)
	shipped, err := os.ReadFile(efsdriver.TestManifestFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		old, new string // the mutation: old, found once in the shipped file, becomes new
		want     string
	}{
		{"misspelled capability", "    multiplePVsSameID: true\n", "    multiplePVSameID: true\n", `unknown capability "multiplePVSameID"`},
		{"misspelled field", "  SupportedSizeRange:\n", "  SupportedSizeRnage:\n", `unknown field "DriverInfo.SupportedSizeRnage"`},
		{"field in the wrong case", "  Capabilities:\n", "  capabilities:\n", `unknown field "DriverInfo.capabilities"`},
		{"duplicate key", "    RWX: true\n", "    RWX: true\n    RWX: false\n", `key "RWX" already set`},
		{"wrong type", "    exec: true\n", "    exec: \"yes\"\n", "cannot unmarshal string into Go struct field DriverInfo.DriverInfo.Capabilities of type bool"},
		{"missing DriverInfo.Name", "  Name: efs.csi.aws.com\n", "", "DriverInfo.Name not set"},
		{"two StorageClass sources", "StorageClass:\n", "StorageClass:\n  FromName: true\n", "StorageClass: 2 sources set"},
		{"bad quantity", "    Max: 64Ti\n", "    Max: 64TB\n", `DriverInfo.SupportedSizeRange.Max "64TB"`},
		{"unknown timeout", "StorageClass:\n", "Timeouts:\n  PodStrat: 5m\nStorageClass:\n", `unknown timeout "PodStrat"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := bytes.Count(shipped, []byte(tt.old)); n != 1 {
				t.Fatalf("the shipped manifest holds %q %d times, want once: update the mutation", tt.old, n)
			}
			ok, out := checkManifest(t, checker, t.TempDir(), strings.Replace(string(shipped), tt.old, tt.new, 1))
			if ok {
				t.Fatalf("storage-manifest-check accepted the manifest with %s:\n%s", tt.name, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("storage-manifest-check output does not name the problem (%q):\n%s", tt.want, out)
			}
		})
	}
}
