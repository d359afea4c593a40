// Package storagemanifest checks an external-storage test driver manifest: the file e2e.test
// takes as --storage.testdriver=FILE and openshift-tests as TEST_CSI_DRIVER_FILES.
//
// The upstream loader, k8s.io/kubernetes/test/e2e/storage/external, decodes it leniently: unknown
// fields, misspelled capability names and duplicate keys all load, and a typo silently turns a
// test off. Check runs that loader and then the checks it lacks.
package storagemanifest

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/storage/external"
	sf "k8s.io/kubernetes/test/e2e/storage/framework"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// classSource is the shape of the StorageClass, SnapshotClass and GroupSnapshotClass sections.
type classSource struct {
	FromName              bool
	FromFile              string
	FromExistingClassName string
}

// definition mirrors the unexported driverDefinition of k8s.io/kubernetes/test/e2e/storage/external
// at the version ../../go.mod pins, field for field; DriverInfo is the upstream type itself. A
// field upstream adds is rejected as unknown until it is added here.
type definition struct {
	DriverInfo            sf.DriverInfo
	StorageClass          classSource
	VolumeAttributesClass struct{ FromFile, FromExistingClassName string }
	SnapshotClass         classSource
	GroupSnapshotClass    classSource
	InlineVolumes         []struct {
		Attributes map[string]string
		Shared     bool
		ReadOnly   bool
	}
	ClientNodeName string
	NodeSelectors  map[string]string
	Timeouts       map[string]string
}

// capabilities are all the Capability constants of k8s.io/kubernetes/test/e2e/storage/framework
// (testdriver.go) at v1.36.3: upstream exports no list of them.
var capabilities = []sf.Capability{
	sf.CapPersistence, sf.CapBlock, sf.CapFsGroup, sf.CapVolumeMountGroup, sf.CapExec,
	sf.CapSnapshotDataSource, sf.CapSnapshotMetadata, sf.CapVolumeGroupSnapshot, sf.CapPVCDataSource,
	sf.CapMultiPODs, sf.CapRWX, sf.CapControllerExpansion, sf.CapNodeExpansion, sf.CapOfflineExpansion,
	sf.CapOnlineExpansion, sf.CapVolumeLimits, sf.CapSingleNodeVolume, sf.CapTopology, sf.CapCapacity,
	sf.CapFSResizeFromSourceNotSupported, sf.CapReadWriteOncePod, sf.CapMultiplePVsSameID,
	sf.CapReadOnlyMany, sf.CapSELinuxMount,
}

// Check loads file through the upstream loader (external.AddDriverDefinition, which registers a
// ginkgo container it never runs) and then strictly: it returns every problem found, or nil.
func Check(file string) error {
	if err := external.AddDriverDefinition(file); err != nil {
		return fmt.Errorf("upstream loader: %w", err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	if err := Strict(data); err != nil {
		return fmt.Errorf("%s:\n%w", file, err)
	}
	return nil
}

// Strict checks what the upstream loader does not: duplicate keys, unknown fields (keys match
// case-sensitively, as the loader's decoder matches them), capability names, Timeouts names and
// durations, SupportedSizeRange quantities, and at most one source per class section.
func Strict(data []byte) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return fmt.Errorf("duplicate or malformed keys: %w", err)
	}
	var d definition
	strictErrs, err := kjson.UnmarshalStrict(js, &d, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	errs := slices.Clone(strictErrs)
	for _, c := range slices.Sorted(maps.Keys(d.DriverInfo.Capabilities)) {
		if !slices.Contains(capabilities, c) {
			errs = append(errs, fmt.Errorf("DriverInfo.Capabilities: unknown capability %q", c))
		}
	}
	for _, q := range []struct{ name, value string }{
		{"Min", d.DriverInfo.SupportedSizeRange.Min},
		{"Max", d.DriverInfo.SupportedSizeRange.Max},
		{"Step", d.DriverInfo.SupportedSizeRange.Step},
	} {
		if _, err := resource.ParseQuantity(q.value); q.value != "" && err != nil {
			errs = append(errs, fmt.Errorf("DriverInfo.SupportedSizeRange.%s %q: %w", q.name, q.value, err))
		}
	}
	errs = append(errs, checkTimeouts(d.Timeouts)...)
	for _, s := range []struct {
		section string
		set     []bool
	}{
		{"StorageClass", []bool{d.StorageClass.FromName, d.StorageClass.FromFile != "", d.StorageClass.FromExistingClassName != ""}},
		{"SnapshotClass", []bool{d.SnapshotClass.FromName, d.SnapshotClass.FromFile != "", d.SnapshotClass.FromExistingClassName != ""}},
		{"GroupSnapshotClass", []bool{d.GroupSnapshotClass.FromName, d.GroupSnapshotClass.FromFile != "", d.GroupSnapshotClass.FromExistingClassName != ""}},
		{"VolumeAttributesClass", []bool{d.VolumeAttributesClass.FromFile != "", d.VolumeAttributesClass.FromExistingClassName != ""}},
	} {
		if n := len(slices.DeleteFunc(s.set, func(b bool) bool { return !b })); n > 1 {
			errs = append(errs, fmt.Errorf("%s: %d sources set, want at most one (the loader silently uses one of them)", s.section, n))
		}
	}
	return errors.Join(errs...)
}

// checkTimeouts: the loader overrides framework.TimeoutContext's durations by name (matched as
// encoding/json matches, ignoring case), and falls back to every default when one value does not
// parse, saying so only in a log line.
func checkTimeouts(timeouts map[string]string) []error {
	var errs []error
	tc := reflect.TypeFor[framework.TimeoutContext]()
	for _, k := range slices.Sorted(maps.Keys(timeouts)) {
		f, ok := tc.FieldByNameFunc(func(name string) bool { return strings.EqualFold(name, k) })
		if !ok || f.Type != reflect.TypeFor[time.Duration]() {
			errs = append(errs, fmt.Errorf("Timeouts: unknown timeout %q (not a duration of framework.TimeoutContext)", k))
		}
		if _, err := time.ParseDuration(timeouts[k]); err != nil {
			errs = append(errs, fmt.Errorf("Timeouts.%s: %w", k, err))
		}
	}
	return errs
}
