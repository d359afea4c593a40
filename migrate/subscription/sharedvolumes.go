package subscription

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	registryclient "github.com/operator-framework/operator-registry/pkg/client"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/sharedvolume/crdcheck"
)

// SharedVolumeCheck is what the plan found of the cluster's SharedVolumes under the SharedVolume
// CRD of each bundle OLM installs on the way. OLM v0's InstallPlan step that replaces a CRD
// refuses, and after a minute of retries fails the whole InstallPlan, when the new CRD drops a
// version the cluster's CRD stores ("risk of data loss") or its schema refuses an existing
// custom resource ("updated validation is too restrictive"), so the plan refuses first.
type SharedVolumeCheck struct {
	// Bundles are the CSVs on the upgrade's path whose bundles bring a SharedVolume CRD.
	Bundles []string `json:"bundles"`
	// Checked is how many SharedVolumes there are; every one is valid under those CRDs.
	Checked int `json:"checked"`
}

// checkSharedVolumes walks the upgrade's path as OLM v0 applies it, each bundle's SharedVolume
// CRD replacing the one before, starting from the cluster's, and fails on what OLM would fail
// the InstallPlan on, naming every refused SharedVolume with every problem and how to fix it.
//
// Like OLM it validates only at versions both CRDs serve, and a CRD that converts by webhook
// lets OLM through on a schema problem; unlike OLM it also runs the CRD's CEL rules, which OLM
// skips but the API server applies to each later write of the object, the operator's status
// updates included, so a SharedVolume they refuse would be stuck after the upgrade.
func checkSharedVolumes(ctx context.Context, config *rest.Config, c client.Client, r registryclient.Interface, catalog string, up *Upgrade) (*SharedVolumeCheck, error) {
	check := &SharedVolumeCheck{Bundles: []string{}}
	var current apiextensionsv1.CustomResourceDefinition
	switch err := c.Get(ctx, client.ObjectKey{Name: efs.SharedVolumeCRD}, &current); {
	case apierrors.IsNotFound(err):
		// OLM creates the CRD: there is nothing it could refuse.
		return check, nil
	case err != nil:
		return nil, fmt.Errorf("reading CRD %s: %w", efs.SharedVolumeCRD, err)
	}
	prev, stored := &current, sets.New(current.Status.StoredVersions...)
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
		next := v.CRD
		specVersions := sets.New[string]()
		for _, ver := range next.Spec.Versions {
			specVersions.Insert(ver.Name)
			if ver.Storage {
				stored.Insert(ver.Name)
			}
		}
		if dropped := sets.List(stored.Difference(specVersions)); len(dropped) > 0 {
			return nil, fmt.Errorf(`the SharedVolume CRD of bundle %s in catalog %s drops version %s, which the cluster's SharedVolumes are stored at (its status.storedVersions): OLM v0 refuses to replace the CRD ("risk of data loss") and fails the InstallPlan, leaving the Subscription stuck. The catalog cannot upgrade this cluster: choose another catalog or channel, or ask its publisher for a bundle that keeps serving %s; nothing was changed`,
				csv, catalog, strings.Join(dropped, ", "), strings.Join(dropped, ", "))
		}
		if bothServe(prev, next) && !webhookConverts(next) {
			report, err := crdcheck.Cluster(ctx, config, "", v)
			if err != nil {
				return nil, fmt.Errorf("checking the SharedVolumes against the CRD of bundle %s: %w", csv, err)
			}
			check.Checked = report.Checked
			for _, sv := range report.Invalid {
				refused = append(refused, fmt.Sprintf("  SharedVolume %s/%s, under the CRD of %s:\n    %s", sv.Namespace, sv.Name, csv, strings.Join(sv.Problems, "\n    ")))
			}
		}
		prev = next
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf(`the SharedVolume CRD the upgrade brings refuses these SharedVolumes: OLM v0 fails the InstallPlan that replaces the CRD on one its schema refuses ("updated validation is too restrictive"), leaving the Subscription stuck, and the API server refuses every later write of one, the operator's status updates included:
%s
Fix each (kubectl edit sharedvolume -n NAMESPACE NAME), or delete it and create it again valid; its PersistentVolume and claim stay. Then check with csi-olm efs check-sharedvolumes and run again: nothing was changed`,
			strings.Join(refused, "\n"))
	}
	return check, nil
}

// bothServe says whether the two CRDs serve a version in common: OLM validates the existing
// objects only at those.
func bothServe(old, next *apiextensionsv1.CustomResourceDefinition) bool {
	served := sets.New[string]()
	for _, ver := range old.Spec.Versions {
		if ver.Served {
			served.Insert(ver.Name)
		}
	}
	return slices.ContainsFunc(next.Spec.Versions, func(ver apiextensionsv1.CustomResourceDefinitionVersion) bool {
		return ver.Served && served.Has(ver.Name)
	})
}

// webhookConverts says whether the CRD converts by webhook, in which case OLM only warns on a
// schema problem, trusting the conversion to mend the objects.
func webhookConverts(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
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
