// Package testmanifest types the external-storage test manifest of a CSI driver: the file the
// Kubernetes storage e2e suites load with `e2e.test --storage.testdriver=FILE`, and
// openshift-tests from TEST_CSI_DRIVER_FILES. The driver definitions build one from their names,
// `csi-olm bundle generate` writes it, and storage-manifest-check (hack/tools.sh) checks it with
// the upstream loader.
//
// The types mirror the part of upstream's driverDefinition (k8s.io/kubernetes
// test/e2e/storage/external, v1.36.3) that the drivers use. The loader matches keys
// case-sensitively and ignores those it does not know, so every key is spelled as upstream's Go
// field: a misspelling would silently turn tests off.
package testmanifest

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Manifest is one test driver definition.
type Manifest struct {
	// Comment is written as YAML comment lines above the manifest: what a reader must fill in.
	Comment string `json:"-"`

	// StorageClass is the class the dynamic provisioning tests copy; zero disables them.
	StorageClass ClassSource `json:"StorageClass,omitzero"`
	// SnapshotClass is the class the snapshot tests copy; zero disables them.
	SnapshotClass ClassSource `json:"SnapshotClass,omitzero"`
	DriverInfo    DriverInfo  `json:"DriverInfo"`
}

// ClassSource says where the tests take a class from: set at most one field.
type ClassSource struct {
	// FromName uses a class with DriverInfo.Name as provisioner and no parameters.
	FromName bool `json:"FromName,omitempty"`
	// FromFile loads the class from a .yaml or .json file.
	FromFile string `json:"FromFile,omitempty"`
	// FromExistingClassName copies a class that exists in the cluster.
	FromExistingClassName string `json:"FromExistingClassName,omitempty"`
}

// DriverInfo is the part of upstream's storageframework.DriverInfo the drivers set.
type DriverInfo struct {
	// Name is the CSI driver's name, as the CSIDriver object and the provisioner carry it.
	Name               string              `json:"Name"`
	SupportedSizeRange SizeRange           `json:"SupportedSizeRange,omitzero"`
	Capabilities       map[Capability]bool `json:"Capabilities,omitempty"`
}

// SizeRange is the volume sizes the driver provisions, as Kubernetes quantities ("1Gi").
type SizeRange struct {
	Min string `json:"Min,omitempty"`
	Max string `json:"Max,omitempty"`
}

// Capability is a key of DriverInfo.Capabilities. The loader accepts any string, and a test
// whose capability is missing (or misspelled) is skipped, so only these names are defined.
type Capability string

// The names of upstream's storageframework.Cap* constants (test/e2e/storage/framework,
// testdriver.go, v1.36.3). storage-manifest-check rejects any other key, and
// bundle/drivers/efsdriver's tests run it on a manifest that sets every one of these.
const (
	CapPersistence                    Capability = "persistence"
	CapBlock                          Capability = "block"
	CapFsGroup                        Capability = "fsGroup"
	CapVolumeMountGroup               Capability = "volumeMountGroup"
	CapExec                           Capability = "exec"
	CapSnapshotDataSource             Capability = "snapshotDataSource"
	CapSnapshotMetadata               Capability = "snapshotMetadata"
	CapVolumeGroupSnapshot            Capability = "groupSnapshot"
	CapPVCDataSource                  Capability = "pvcDataSource"
	CapMultiPODs                      Capability = "multipods"
	CapRWX                            Capability = "RWX"
	CapControllerExpansion            Capability = "controllerExpansion"
	CapNodeExpansion                  Capability = "nodeExpansion"
	CapOfflineExpansion               Capability = "offlineExpansion"
	CapOnlineExpansion                Capability = "onlineExpansion"
	CapVolumeLimits                   Capability = "volumeLimits"
	CapSingleNodeVolume               Capability = "singleNodeVolume"
	CapTopology                       Capability = "topology"
	CapCapacity                       Capability = "capacity"
	CapFSResizeFromSourceNotSupported Capability = "FSResizeFromSourceNotSupported"
	CapReadWriteOncePod               Capability = "readWriteOncePod"
	CapMultiplePVsSameID              Capability = "multiplePVsSameID"
	CapReadOnlyMany                   Capability = "capReadOnlyMany"
	CapSELinuxMount                   Capability = "seLinuxMount"
)

// Capabilities lists every Capability constant.
func Capabilities() []Capability {
	return []Capability{CapPersistence, CapBlock, CapFsGroup, CapVolumeMountGroup, CapExec,
		CapSnapshotDataSource, CapSnapshotMetadata, CapVolumeGroupSnapshot, CapPVCDataSource,
		CapMultiPODs, CapRWX, CapControllerExpansion, CapNodeExpansion, CapOfflineExpansion,
		CapOnlineExpansion, CapVolumeLimits, CapSingleNodeVolume, CapTopology, CapCapacity,
		CapFSResizeFromSourceNotSupported, CapReadWriteOncePod, CapMultiplePVsSameID,
		CapReadOnlyMany, CapSELinuxMount}
}

// YAML renders the manifest as it is committed: keys sorted, under a header naming its generator
// and then Comment.
func (m Manifest) YAML() ([]byte, error) {
	if m.DriverInfo.Name == "" {
		return nil, fmt.Errorf("test manifest: DriverInfo.Name not set")
	}
	for section, c := range map[string]ClassSource{"StorageClass": m.StorageClass, "SnapshotClass": m.SnapshotClass} {
		if c.sources() > 1 {
			return nil, fmt.Errorf("test manifest of %s: %s sets %d sources, want at most one", m.DriverInfo.Name, section, c.sources())
		}
	}
	body, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding the test manifest of %s: %w", m.DriverInfo.Name, err)
	}
	var b strings.Builder
	b.WriteString("# Generated by `csi-olm bundle generate` from the driver's definition; do not edit.\n")
	if m.Comment != "" {
		for line := range strings.SplitSeq(strings.TrimRight(m.Comment, "\n"), "\n") {
			b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	b.Write(body)
	return []byte(b.String()), nil
}

func (c ClassSource) sources() int {
	n := 0
	for _, set := range []bool{c.FromName, c.FromFile != "", c.FromExistingClassName != ""} {
		if set {
			n++
		}
	}
	return n
}
