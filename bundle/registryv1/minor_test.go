package registryv1_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/pkg/registry"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/registryv1"
	"github.com/csi-olm/csi-olm/internal/openshift"
)

// TestBundlesAgreeWithTheirMinor reads every committed bundle built for one OpenShift minor
// (com.redhat.openshift.versions =v4.N) as it ships, and checks that what else it says of the
// cluster follows from that minor: it runs on the minor's Kubernetes, lets the cluster go one
// minor further and no more, is a release of that minor, and deploys the sidecars OpenShift
// built for it.
func TestBundlesAgreeWithTheirMinor(t *testing.T) {
	checked := 0
	for _, o := range drivers.All() {
		for _, r := range o.Releases {
			if r.OpenShift == "" {
				continue // not versioned with OpenShift (EBS and Manila 4.5, the community operator)
			}
			checked++
			checkBundleMinor(t, filepath.Join(bundleRoot, o.Package, r.Version), r.OpenShift)
		}
	}
	if checked == 0 {
		t.Fatal("no release is built for an OpenShift minor")
	}
}

func checkBundleMinor(t *testing.T, dir, declared string) {
	t.Helper()
	var a struct{ Annotations map[string]string }
	readYAML(t, filepath.Join(dir, registryv1.AnnotationsFile), &a)
	versions, err := openshift.ParseVersions(a.Annotations[registryv1.OpenShiftVersionsLabel])
	if err != nil {
		t.Errorf("%s: %v", dir, err)
		return
	}
	if versions.To == nil || *versions.To != versions.From || versions.From.String() != declared {
		t.Errorf("%s: %s is %s; want =v%s, only the minor the release is built for", dir, registryv1.OpenShiftVersionsLabel, versions, declared)
		return
	}
	m := versions.From
	var props registry.PropertiesFile
	readYAML(t, filepath.Join(dir, registryv1.PropertiesFile), &props)
	var max []string
	for _, p := range props.Properties {
		if p.Type == registryv1.MaxOpenShiftVersionProperty {
			max = append(max, strings.Trim(string(p.Value), `"`))
		}
	}
	if len(max) != 1 || max[0] != m.Next().String() {
		t.Errorf("%s: built for %s, %s is %v; want %s, the next minor", dir, m.Index(), registryv1.MaxOpenShiftVersionProperty, max, m.Next())
	}
	csvs, _ := filepath.Glob(filepath.Join(dir, registryv1.ManifestsDir, "*.clusterserviceversion.yaml"))
	if len(csvs) != 1 {
		t.Fatalf("%s: %d CSVs", dir, len(csvs))
	}
	var csv v1alpha1.ClusterServiceVersion
	readYAML(t, csvs[0], &csv)
	if csv.Spec.MinKubeVersion != m.KubeVersion().String() {
		t.Errorf("%s: built for %s, minKubeVersion is %s; want %s, the minor's Kubernetes", dir, m.Index(), csv.Spec.MinKubeVersion, m.KubeVersion())
	}
	if v := csv.Spec.Version; v.Major != uint64(m.Major) || v.Minor != uint64(m.Minor) {
		t.Errorf("%s: built for %s, but version %s is another minor's release", dir, m.Index(), v)
	}
	sidecars := 0
	for _, img := range csv.Spec.RelatedImages {
		named, err := reference.ParseNormalizedNamed(img.Image)
		if err != nil {
			t.Errorf("%s: related image %s: %v", dir, img.Image, err)
			continue
		}
		if !strings.HasPrefix(reference.Path(named), "openshift/") {
			continue
		}
		sidecars++
		if tagged, ok := named.(reference.Tagged); !ok || tagged.Tag() != m.String() {
			t.Errorf("%s: built for %s, but sidecar %s is not OpenShift %s's", dir, m.Index(), img.Image, m)
		}
	}
	if sidecars == 0 {
		t.Errorf("%s: no OpenShift sidecar among the related images %v", dir, csv.Spec.RelatedImages)
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
