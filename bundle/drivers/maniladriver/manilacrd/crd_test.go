package manilacrd_test

import (
	"testing"

	"github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/manilacrd"
	manilav1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/v1alpha1"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// The singleton's name is enforced by the schema, so also by the Kubernetes 1.18 of OpenShift
// 4.5, which ignores CEL rules: the API server refuses any other name with or without them.
func TestOnlyTheSingletonNameIsAllowed(t *testing.T) {
	testutil.CheckOnlyNameAllowed(t, manilacrd.ManilaDrivers, manilav1alpha1.Name)
}
