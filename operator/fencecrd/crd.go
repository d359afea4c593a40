// Package fencecrd holds the RemovalFence CustomResourceDefinition generated from the Go types in
// ../api/v1alpha1 (`make generate`), for the EFS bundle and the tests that install it.
package fencecrd

import _ "embed"

// RemovalFences is the RemovalFence CRD manifest.
//
//go:embed aws-efs.csi-olm.io_removalfences.yaml
var RemovalFences []byte
