// Package crd holds the SharedVolume CustomResourceDefinition generated from the Go types in
// ../api/v1alpha1 (`make generate`), for the EFS bundle and the tests that install it.
package crd

import _ "embed"

// SharedVolumes is the SharedVolume CRD manifest.
//
//go:embed aws-efs.managed.openshift.io_sharedvolumes.yaml
var SharedVolumes []byte
