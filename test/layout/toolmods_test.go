package layout_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// sharedToolModules are the tools modules (hack/tools.sh) whose libraries overlap this module's
// most: Go's build cache keys a compiled package by its module's required version and its
// dependencies', so a library these modules require below this module's version is compiled
// twice on a fresh machine (the Kubernetes libraries beneath the test bed's binaries were 47 MiB of
// source compiled again). A version above this module's is what the tool itself needs.
var sharedToolModules = []string{"hack/tools/kube", "hack/tools/coredns"}

// belowOnPurpose are the modules a tools module keeps below this module's version, and why.
var belowOnPurpose = map[string]string{
	// k8s.io/kubernetes v1.36's kubelet uses NodeGetVolumeStatsResponse.VolumeCondition and
	// NodeServiceCapability_RPC_VOLUME_CONDITION, which later releases of the spec do not have.
	"github.com/container-storage-interface/spec": "hack/tools/kube",
}

// TestToolModulesKeepThisModulesPins fails when a tools module requires a library this module
// also requires at a lower version, which a bump of this module's libraries without the tools'
// leaves behind: `go get <module>@<version>` in the tools module's directory, then `go mod tidy`
// there, lines it up again.
func TestToolModulesKeepThisModulesPins(t *testing.T) {
	mine := requires(t, ".")
	for _, dir := range sharedToolModules {
		for path, v := range requires(t, dir) {
			want, ok := mine[path]
			if !ok || semver.Compare(v, want) >= 0 {
				continue
			}
			if belowOnPurpose[path] == dir {
				continue
			}
			t.Errorf("%s/go.mod requires %s %s, below this module's %s: a fresh machine compiles it and what it imports twice (cd %s && go get %s@%s && go mod tidy)",
				dir, path, v, want, dir, path, want)
		}
	}
}

// requires returns the versions dir's go.mod requires, by module path.
func requires(t *testing.T, dir string) map[string]string {
	t.Helper()
	name := filepath.Join(root, dir, "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(name, data, nil)
	if err != nil {
		t.Fatalf("parsing %s: %v", name, err)
	}
	out := make(map[string]string, len(f.Require))
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	return out
}
