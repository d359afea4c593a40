// Package crd holds the ManilaDriver CustomResourceDefinition generated from ../v1alpha1.
package manilacrd

import (
	_ "embed"

	manilav1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/v1alpha1"
	"github.com/csi-olm/csi-olm/internal/crdschema"
)

// generated is what controller-gen writes (`make generate`).
//
//go:embed csi.openshift.io_maniladrivers.yaml
var generated []byte

// ManilaDrivers is the ManilaDriver CRD manifest: the generated one, whose schema
// also allows the name `cluster` only. The OLM-era operator acts on that object alone, and the
// clusters this CRD is for run Kubernetes 1.18 (OpenShift 4.5), which enforces a schema
// restriction of metadata.name but ignores CEL rules (x-kubernetes-validations, from 1.25).
var ManilaDrivers = crdschema.MustRestrictName("ManilaDriver", generated, manilav1alpha1.Name)
