// Package version reports what a csi-olm binary was built from.
package version

import (
	"runtime"
	"runtime/debug"
	"slices"
)

// Set at link time by the Makefile (-X). A plain `go build` reports "dev".
var (
	version = "dev"
	commit  = ""
)

// Info describes a build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Dependencies are the versions of the libraries whose formats the build speaks.
	Dependencies map[string]string `json:"dependencies,omitempty"`
}

// keyDependencies are the modules whose versions decide what bundles and catalogs look like.
var keyDependencies = []string{
	"github.com/operator-framework/api",
	"github.com/operator-framework/operator-registry",
	"github.com/openshift/library-go",
	"k8s.io/client-go",
}

// Get returns the build's version information: the version and commit the Makefile links in,
// or else those Go stamped into the binary (the module version `go install ...@v1.2.3` builds,
// or the pseudo-version and VCS revision of a clone's `go build`).
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version, commit)
}

func fromBuild(bi *debug.BuildInfo, linkedVersion, linkedCommit string) Info {
	info := Info{Version: linkedVersion, Commit: linkedCommit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return info
	}
	if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if info.Commit == "" {
				info.Commit = s.Value
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && linkedCommit == "" && info.Commit != "" {
		info.Commit += "-dirty"
	}
	for _, dep := range bi.Deps {
		if slices.Contains(keyDependencies, dep.Path) {
			if info.Dependencies == nil {
				info.Dependencies = map[string]string{}
			}
			info.Dependencies[dep.Path] = dep.Version
		}
	}
	return info
}
