// Command registry is the CNCF distribution registry with only the filesystem storage driver,
// which the test bed configures (testbed/registry.go). Built by `hack/tools.sh registry` at the
// version ./go.mod pins. The upstream main also links the Azure, GCS and S3 drivers, CloudFront
// and the pull-through proxy: most of its build on a fresh machine, none of it run here.
package main

import (
	"os"

	"github.com/distribution/distribution/v3/registry"

	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
