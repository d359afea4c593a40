// Package crd holds the community SharedVolume CRD generated from ../v1alpha1.
package communityefscrd

import _ "embed"

// SharedVolumes is the community SharedVolume CRD manifest.
//
//go:embed aws-efs.managed.openshift.io_sharedvolumes.yaml
var SharedVolumes []byte
