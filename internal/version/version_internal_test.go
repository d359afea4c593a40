package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	installed := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/csi-olm/csi-olm", Version: "v1.2.3"},
		Deps: []*debug.Module{{Path: "github.com/operator-framework/operator-registry", Version: "v1.55.0"}, {Path: "example.com/other", Version: "v0.1.0"}},
	}
	clone := &debug.BuildInfo{
		Main:     debug.Module{Path: "github.com/csi-olm/csi-olm", Version: "v0.0.0-20261127183000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}},
	}
	for _, tc := range []struct {
		name                 string
		bi                   *debug.BuildInfo
		linkVersion, linkRev string
		version, commit      string
	}{
		{"go install @v1.2.3", installed, "dev", "", "v1.2.3", ""},
		{"go build in a changed clone", clone, "dev", "", "v0.0.0-20261127183000-0123456789ab+dirty", "0123456789abcdef-dirty"},
		{"the Makefile's link flags win", clone, "v4.11.0", "fedcba", "v4.11.0", "fedcba"},
		{"go run", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "", "dev", ""},
		{"no build information", nil, "dev", "", "dev", ""},
	} {
		got := fromBuild(tc.bi, tc.linkVersion, tc.linkRev)
		if got.Version != tc.version || got.Commit != tc.commit {
			t.Errorf("%s: version %q commit %q, want %q %q", tc.name, got.Version, got.Commit, tc.version, tc.commit)
		}
	}
	if deps := fromBuild(installed, "dev", "").Dependencies; len(deps) != 1 || deps["github.com/operator-framework/operator-registry"] != "v1.55.0" {
		t.Errorf("dependencies %v, want operator-registry's only", deps)
	}
}
