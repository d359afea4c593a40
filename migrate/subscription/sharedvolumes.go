package subscription

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/sharedvolume/crdcheck"
)

// SharedVolumeCheck is what the plan found of the cluster's SharedVolumes under the SharedVolume
// CRD of each bundle OLM installs on the way. OLM v0 validates every existing custom resource
// against the schema of a CRD an InstallPlan replaces, and fails the whole InstallPlan on the
// first one it refuses ("updated validation is too restrictive"), so the plan refuses first.
type SharedVolumeCheck struct {
	// Bundles are the CSVs on the upgrade's path whose bundles bring a SharedVolume CRD.
	Bundles []string `json:"bundles"`
	// Checked is how many SharedVolumes there are; every one is valid under those CRDs.
	Checked int `json:"checked"`
}

// checkSharedVolumes validates every SharedVolume of the cluster against the SharedVolume CRD
// of each bundle on the upgrade's path, as `csi-olm efs check-sharedvolumes` does against the
// certified CRD, and fails naming each SharedVolume a CRD refuses, with every problem and how to
// fix it. Bundles that bring the same CRD are validated against once.
func checkSharedVolumes(ctx context.Context, config *rest.Config, r registryclient.Interface, catalog string, up *Upgrade) (*SharedVolumeCheck, error) {
	check := &SharedVolumeCheck{Bundles: []string{}}
	seen := map[string]bool{}
	var refused []string
	for _, csv := range up.Path {
		manifest, err := sharedVolumeCRD(ctx, r, up.Channel, csv)
		if err != nil {
			return nil, fmt.Errorf("reading the SharedVolume CRD of bundle %s in catalog %s: %w", csv, catalog, err)
		}
		if manifest == nil {
			continue
		}
		check.Bundles = append(check.Bundles, csv)
		if seen[string(manifest)] {
			continue
		}
		seen[string(manifest)] = true
		v, err := crdcheck.NewValidator(manifest)
		if err != nil {
			return nil, fmt.Errorf("the SharedVolume CRD of bundle %s in catalog %s: %w", csv, catalog, err)
		}
		report, err := crdcheck.Cluster(ctx, config, "", v)
		if err != nil {
			return nil, fmt.Errorf("checking the SharedVolumes against the CRD of bundle %s: %w", csv, err)
		}
		check.Checked = report.Checked
		for _, sv := range report.Invalid {
			refused = append(refused, fmt.Sprintf("  SharedVolume %s/%s, under the CRD of %s:\n    %s", sv.Namespace, sv.Name, csv, strings.Join(sv.Problems, "\n    ")))
		}
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf(`OLM validates every existing SharedVolume against the SharedVolume CRD of each bundle it installs, and fails the InstallPlan, leaving the Subscription stuck, on one that CRD refuses ("updated validation is too restrictive"); these SharedVolumes would be refused:
%s
Fix each (kubectl edit sharedvolume -n NAMESPACE NAME), or delete it and create it again valid; its PersistentVolume and claim stay. Then check with csi-olm efs check-sharedvolumes and run again: nothing was changed`,
			strings.Join(refused, "\n"))
	}
	return check, nil
}

// sharedVolumeCRD is the SharedVolume CRD of a bundle of the target catalog, nil when the bundle
// brings none: from the bundle's objects when the catalog embeds them (an offline catalog), else
// from the bundle image the catalog names, which OLM itself unpacks (a published catalog).
func sharedVolumeCRD(ctx context.Context, r registryclient.Interface, channel, csv string) ([]byte, error) {
	b, err := r.GetBundle(ctx, efs.Package, channel, csv)
	if err != nil {
		return nil, fmt.Errorf("reading the bundle from the catalog's registry: %w", err)
	}
	manifests := map[string][]byte{}
	for i, o := range b.Object {
		manifests[fmt.Sprintf("object %d", i)] = []byte(o)
	}
	if len(manifests) == 0 {
		if b.BundlePath == "" {
			return nil, fmt.Errorf("the catalog gives neither its objects nor its bundle image")
		}
		if manifests, err = load.BundleManifests(ctx, b.BundlePath); err != nil {
			return nil, err
		}
	}
	for _, file := range slices.Sorted(maps.Keys(manifests)) {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(manifests[file], &head); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", file, err)
		}
		if head.Kind == "CustomResourceDefinition" && head.Metadata.Name == efs.SharedVolumeCRD {
			return manifests[file], nil
		}
	}
	return nil, nil
}
