// Package version reports what a csi-olm binary was built from.
package version

import (
	"runtime"
	"runtime/debug"
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

// Get returns the build's version information.
func Get() Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			for _, key := range keyDependencies {
				if dep.Path == key {
					if info.Dependencies == nil {
						info.Dependencies = map[string]string{}
					}
					info.Dependencies[key] = dep.Version
				}
			}
		}
	}
	return info
}
