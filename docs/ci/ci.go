// Package ci holds the CI recipe of a catalog repository: check-catalogs.sh, which the csi-olm
// image carries (images.CLI) so that a pipeline runs the script of the csi-olm it pins, and the
// GitHub Actions workflow and Tekton Task that run it (README.md here).
package ci

import _ "embed"

// CheckCatalogs is check-catalogs.sh.
//
//go:embed check-catalogs.sh
var CheckCatalogs []byte

// TektonTask is the Tekton Task that runs it, which the end-to-end test runs as its step.
//
//go:embed tekton-task.yaml
var TektonTask []byte

// GitHubActions is the GitHub Actions workflow that runs it.
//
//go:embed github-actions.yaml
var GitHubActions []byte
