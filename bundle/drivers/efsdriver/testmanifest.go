package efsdriver

import (
	"github.com/csi-olm/csi-olm/bundle/testmanifest"
	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// TestManifestFile is where `csi-olm bundle generate` writes TestManifest, relative to this
// package's directory (bundle/drivers/efsdriver/testing/manifest.yaml, as OpenShift's EFS operator keeps
// its own in assets/testing/manifest.yaml).
const TestManifestFile = "testing/manifest.yaml"

// StorageClassPlaceholder stands for the StorageClass the tests copy. EFS provisions only from a
// class that names a file system (parameters fileSystemId and provisioningMode: efs-ap), so the
// operator creates no StorageClass and the manifest cannot name one: whoever runs the tests
// creates the class and substitutes its name, as OpenShift's CI does with the same placeholder
// (`storageclassname=<class> envsubst`).
const StorageClassPlaceholder = "${storageclassname}"

// TestManifest returns the external-storage test manifest of the EFS CSI driver, for
// openshift-tests (TEST_CSI_DRIVER_FILES) and e2e.test (--storage.testdriver). Its capabilities
// are the driver's: ReadWriteMany file systems whose volumes survive their pods, and nothing of
// block, expansion, snapshots, topology, fsGroup or attach limits. Several PersistentVolumes may
// name one file system (multiplePVsSameID), as static provisioning and SharedVolumes do.
func TestManifest() testmanifest.Manifest {
	return testmanifest.Manifest{
		Comment: `Replace ` + StorageClassPlaceholder + ` with the name of an EFS StorageClass (the operator creates
none; its parameters name the file system), e.g.
  storageclassname=efs-sc envsubst < manifest.yaml > /tmp/efs-manifest.yaml
  TEST_CSI_DRIVER_FILES=/tmp/efs-manifest.yaml openshift-tests run openshift/csi`,
		StorageClass: testmanifest.ClassSource{FromExistingClassName: StorageClassPlaceholder},
		// No SnapshotClass: the driver takes no snapshots, so there is no class to name.
		DriverInfo: testmanifest.DriverInfo{
			Name: efs.DriverName,
			// EFS file systems are elastic; the driver accepts any requested size.
			SupportedSizeRange: testmanifest.SizeRange{Min: "1Gi", Max: "64Ti"},
			Capabilities: map[testmanifest.Capability]bool{
				testmanifest.CapPersistence:         true,
				testmanifest.CapExec:                true,
				testmanifest.CapRWX:                 true,
				testmanifest.CapMultiplePVsSameID:   true,
				testmanifest.CapFsGroup:             false,
				testmanifest.CapBlock:               false,
				testmanifest.CapVolumeLimits:        false,
				testmanifest.CapControllerExpansion: false,
				testmanifest.CapNodeExpansion:       false,
				testmanifest.CapSnapshotDataSource:  false,
				testmanifest.CapTopology:            false,
			},
		},
	}
}
