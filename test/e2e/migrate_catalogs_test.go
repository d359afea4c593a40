package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/testbed"
)

// catalogVariant changes the aws-efs-operator package of the offline certified catalog so that
// migrating to it meets one fault. The tests serve the result with opm to real OLM: the fault is
// OLM's own reaction, not a status written by the test.
type catalogVariant func(t testing.TB, cfg *declcfg.DeclarativeConfig)

// serveCatalogVariant serves the aws-efs-operator package of the certified catalog of the
// cluster's minor, changed by variant, as CatalogSource olm/<name>, and returns its registry's
// address.
func serveCatalogVariant(ctx context.Context, t testing.TB, s *testbed.Stack, name string, variant catalogVariant) string {
	t.Helper()
	certified, err := declcfg.LoadFS(ctx, os.DirFS(tree.Path(filepath.Join("..", "..", "catalog", "certified"), clusterMinor)))
	must(t, err)
	var cfg declcfg.DeclarativeConfig
	for _, p := range certified.Packages {
		if p.Name == efsPackage {
			cfg.Packages = append(cfg.Packages, p)
		}
	}
	for _, c := range certified.Channels {
		if c.Package == efsPackage {
			cfg.Channels = append(cfg.Channels, c)
		}
	}
	for _, b := range certified.Bundles {
		if b.Package == efsPackage {
			cfg.Bundles = append(cfg.Bundles, b)
		}
	}
	variant(t, &cfg)
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "catalog.json"))
	must(t, err)
	must(t, declcfg.WriteJSON(cfg, f))
	must(t, f.Close())
	addr, err := s.ServeCatalog(ctx, name, dir)
	must(t, err)
	must(t, s.CreateCatalogSource(ctx, testbed.OLMNamespace, name, addr))
	return addr
}

// unchanged serves the certified package as it ships.
func unchanged(testing.TB, *declcfg.DeclarativeConfig) {}

// edgeless keeps only the head in the stable channel, with no replaces, skips or skipRange:
// nothing upgrades from the community CSV.
func edgeless(t testing.TB, cfg *declcfg.DeclarativeConfig) {
	for i := range cfg.Packages {
		cfg.Packages[i].DefaultChannel = "stable"
	}
	cfg.Channels = []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: efsPackage, Name: "stable", Entries: []declcfg.ChannelEntry{{Name: certifiedHeadCSV}}}}
	head := headBundle(t, cfg)
	cfg.Bundles = []declcfg.Bundle{*head}
}

// requiresMissingAPI makes every bundle depend on an API no bundle provides: the registry still
// offers the upgrade, but OLM cannot resolve it (ConstraintsNotSatisfiable) and installs nothing.
// Were one bundle of the channel left installable, OLM would upgrade to it instead.
func requiresMissingAPI(_ testing.TB, cfg *declcfg.DeclarativeConfig) {
	for i := range cfg.Bundles {
		cfg.Bundles[i].Properties = append(cfg.Bundles[i].Properties, property.MustBuildGVKRequired(missingAPI.group, missingAPI.version, missingAPI.kind))
	}
}

// headCRDDropsStoredVersion renames the version of the head's SharedVolume CRD. The cluster's
// CRD stores v1alpha1, so OLM refuses to update it ("risk of data loss") and, once its retry
// timeout passed, fails the InstallPlan.
func headCRDDropsStoredVersion(t testing.TB, cfg *declcfg.DeclarativeConfig) {
	editHeadObject(t, cfg, "CustomResourceDefinition", efs.SharedVolumeCRD, func(crd map[string]any) {
		versions := crd["spec"].(map[string]any)["versions"].([]any)
		for _, v := range versions {
			v.(map[string]any)["name"] = "v1beta1"
		}
	})
}

// headNeedsUnservedAPI adds to the head CSV's native APIs one the cluster does not serve: OLM
// installs the CSV and leaves it Pending (RequirementsNotMet).
func headNeedsUnservedAPI(t testing.TB, cfg *declcfg.DeclarativeConfig) {
	editHeadObject(t, cfg, "ClusterServiceVersion", certifiedHeadCSV, func(csv map[string]any) {
		spec := csv["spec"].(map[string]any)
		native, _ := spec["nativeAPIs"].([]any)
		spec["nativeAPIs"] = append(native, map[string]any{"group": missingAPI.group, "version": missingAPI.version, "kind": missingAPI.kind})
	})
}

// missingAPI is an API that no bundle provides and the test bed does not serve.
var missingAPI = struct{ group, version, kind string }{"faults.csi-olm.io", "v1", "NeverServed"}

func headBundle(t testing.TB, cfg *declcfg.DeclarativeConfig) *declcfg.Bundle {
	t.Helper()
	for i := range cfg.Bundles {
		if cfg.Bundles[i].Name == certifiedHeadCSV {
			return &cfg.Bundles[i]
		}
	}
	t.Fatalf("the certified catalog has no bundle %s", certifiedHeadCSV)
	return nil
}

// editHeadObject edits the object of a kind and name that the head bundle embeds.
func editHeadObject(t testing.TB, cfg *declcfg.DeclarativeConfig, kind, name string, edit func(map[string]any)) {
	t.Helper()
	head := headBundle(t, cfg)
	edited := 0
	for i, p := range head.Properties {
		if p.Type != property.TypeBundleObject {
			continue
		}
		var o property.BundleObject
		must(t, json.Unmarshal(p.Value, &o))
		var obj map[string]any
		must(t, json.Unmarshal(o.Data, &obj))
		if metadata, _ := obj["metadata"].(map[string]any); obj["kind"] != kind || metadata["name"] != name {
			continue
		}
		edit(obj)
		raw, err := json.Marshal(obj)
		must(t, err)
		head.Properties[i] = property.MustBuildBundleObject(raw)
		edited++
	}
	if edited != 1 {
		t.Fatalf("bundle %s embeds %d objects of kind %s named %s, want 1", head.Name, edited, kind, name)
	}
}
