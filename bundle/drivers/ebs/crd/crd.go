// Package crd holds the AWSEBSDriver CustomResourceDefinition generated from ../v1alpha1.
package crd

import _ "embed"

// AWSEBSDrivers is the AWSEBSDriver CRD manifest.
//
//go:embed csi.openshift.io_awsebsdrivers.yaml
var AWSEBSDrivers []byte
