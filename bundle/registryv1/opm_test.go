package registryv1_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/csi-olm/csi-olm/test/testutil"
)

// TestOpmRendersCommittedBundles feeds every committed bundle to the real opm, the tool that
// catalogs are built with, and checks what it reads back: no registry, no image pull.
func TestOpmRendersCommittedBundles(t *testing.T) {
	opm := testutil.Opm(t)
	for _, b := range buildAll(t) {
		t.Run(b.Dir(), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(opm, "render", filepath.Join(bundleRoot, b.Dir()), "-o", "json")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("opm render: %v\n%s", err, stderr.String())
			}
			cfg, err := declcfg.LoadReader(&stdout)
			if err != nil {
				t.Fatalf("opm render output does not load: %v", err)
			}
			if len(cfg.Bundles) != 1 {
				t.Fatalf("opm rendered %d bundles, want 1", len(cfg.Bundles))
			}
			rendered := cfg.Bundles[0]
			if rendered.Name != b.CSVName || rendered.Package != b.Package || rendered.Image != "" {
				t.Errorf("rendered name=%q package=%q image=%q, want %q %q and no image", rendered.Name, rendered.Package, rendered.Image, b.CSVName, b.Package)
			}
			props, err := property.Parse(rendered.Properties)
			if err != nil {
				t.Fatalf("properties: %v", err)
			}
			if len(props.Packages) != 1 || props.Packages[0].Version != b.Version {
				t.Errorf("olm.package = %+v, want version %s", props.Packages, b.Version)
			}
			if owned := csvOf(t, b).Spec.CustomResourceDefinitions.Owned; len(props.GVKs) != len(owned) {
				t.Errorf("olm.gvk = %+v, want one for each owned CRD %+v", props.GVKs, owned)
			}
			manifests := 0
			for name := range b.Files {
				if filepath.Dir(name) == "manifests" {
					manifests++
				}
			}
			if len(props.BundleObjects) != manifests {
				t.Errorf("%d embedded bundle objects, want one per manifest (%d)", len(props.BundleObjects), manifests)
			}
			if len(rendered.RelatedImages) == 0 {
				t.Errorf("no related images rendered")
			}
		})
	}
}
