// Package drivers lists the operator definitions csi-olm builds bundles and catalogs from.
package drivers

import (
	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers/communityefs"
	"github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver"
	"github.com/csi-olm/csi-olm/bundle/drivers/efsdriver"
	"github.com/csi-olm/csi-olm/bundle/drivers/maniladriver"
)

// All returns every operator definition, community first. Each call returns fresh values, so a
// caller may change them.
func All() []definition.Operator {
	return []definition.Operator{communityefs.Operator(), efsdriver.Operator(), ebsdriver.Operator(), maniladriver.Operator()}
}
