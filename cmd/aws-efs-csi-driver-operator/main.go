// Command aws-efs-csi-driver-operator runs the AWS EFS CSI driver operator. The operator itself
// arrives with its own issue; until then the binary only identifies itself, so that the bundle's
// Deployment has a real command to point at.
package main

import (
	"fmt"
	"os"

	"github.com/csi-olm/csi-olm/internal/version"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println(version.Get().Version)
		return
	}
	fmt.Fprintln(os.Stderr, "aws-efs-csi-driver-operator: the operator is not implemented yet; only `version` works")
	os.Exit(2)
}
