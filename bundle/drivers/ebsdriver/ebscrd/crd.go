// Package crd holds the AWSEBSDriver CustomResourceDefinition generated from ../v1alpha1.
package ebscrd

import (
	_ "embed"

	ebsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver/v1alpha1"
	"github.com/csi-olm/csi-olm/internal/crdschema"
)

// generated is what controller-gen writes (`make generate`).
//
//go:embed csi.openshift.io_awsebsdrivers.yaml
var generated []byte

// AWSEBSDrivers is the AWSEBSDriver CRD manifest: the generated one, whose schema
// also allows the name `cluster` only. The OLM-era operator acts on that object alone, and the
// clusters this CRD is for run Kubernetes 1.18 (OpenShift 4.5), which enforces a schema
// restriction of metadata.name but ignores CEL rules (x-kubernetes-validations, from 1.25).
var AWSEBSDrivers = crdschema.MustRestrictName("AWSEBSDriver", generated, ebsv1alpha1.Name)
