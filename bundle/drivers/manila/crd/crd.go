// Package crd holds the ManilaDriver CustomResourceDefinition generated from ../v1alpha1.
package crd

import _ "embed"

// ManilaDrivers is the ManilaDriver CRD manifest.
//
//go:embed csi.openshift.io_maniladrivers.yaml
var ManilaDrivers []byte
