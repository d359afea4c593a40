package drivers

import (
	"path"

	"github.com/csi-olm/csi-olm/bundle/drivers/efsdriver"
	"github.com/csi-olm/csi-olm/bundle/testmanifest"
)

// TestManifests returns the drivers' external-storage test manifests that `bundle generate`
// writes, by slash path relative to its output directory (bundle/): each next to its driver's
// definition. Each call returns fresh values.
func TestManifests() map[string]testmanifest.Manifest {
	return map[string]testmanifest.Manifest{
		path.Join("drivers/efsdriver", efsdriver.TestManifestFile): efsdriver.TestManifest(),
	}
}
