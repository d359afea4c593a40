package mirror_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/catalog/mirror"
)

// The digests are those of the strings "operator" and "bundle": nothing is pulled here, so any
// well-formed digest serves, and these name no image.
var (
	operatorDigest = digestOf("operator")
	bundleDigest   = digestOf("bundle")
)

func digestOf(s string) string { return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(s))) }

func catalog() *declcfg.DeclarativeConfig {
	return &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Name: "aws-efs-operator"}},
		Channels: []declcfg.Channel{{Package: "aws-efs-operator", Name: "stable"}, {Package: "aws-efs-operator", Name: "preview"}},
		Bundles: []declcfg.Bundle{
			{Name: "a.v1", Package: "aws-efs-operator", Image: "quay.io/csi-olm/a-bundle@" + bundleDigest, RelatedImages: []declcfg.RelatedImage{
				{Name: "operator", Image: "quay.io/csi-olm/a@" + operatorDigest},
				{Image: "quay.io/csi-olm/a-bundle@" + bundleDigest},
			}},
			{Name: "a.v2", Package: "aws-efs-operator", RelatedImages: []declcfg.RelatedImage{
				{Name: "operator", Image: "quay.io/csi-olm/a@" + operatorDigest},
				{Name: "proxy", Image: "docker.io/brancz/proxy:v1"},
			}},
		},
	}
}

func TestListNamesEveryImageOnceWithWhatNeedsIt(t *testing.T) {
	got := mirror.List(catalog())
	want := []mirror.Image{
		{Ref: "docker.io/brancz/proxy:v1", Users: []string{"a.v2: proxy"}},
		{Ref: "quay.io/csi-olm/a-bundle@" + bundleDigest, Users: []string{"a.v1: bundle image"}},
		{Ref: "quay.io/csi-olm/a@" + operatorDigest, Users: []string{"a.v1: operator", "a.v2: operator"}},
	}
	if len(got) != len(want) {
		t.Fatalf("List = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Ref != want[i].Ref || strings.Join(got[i].Users, ",") != strings.Join(want[i].Users, ",") {
			t.Errorf("List[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if unpinned := mirror.Unpinned(got); len(unpinned) != 1 || !strings.Contains(unpinned[0], "docker.io/brancz/proxy:v1 (a.v2: proxy): not pinned by digest") {
		t.Errorf("Unpinned = %q", unpinned)
	}
}

func TestDigestMirrorSet(t *testing.T) {
	if _, err := mirror.DigestMirrorSet("x", "mirror.example:5000", mirror.List(catalog())); err == nil || !strings.Contains(err.Error(), "docker.io/brancz/proxy:v1 (a.v2: proxy)") {
		t.Errorf("an unpinned image was accepted, or not named: %v", err)
	}
	cfg := catalog()
	cfg.Bundles = cfg.Bundles[:1]
	set, err := mirror.DigestMirrorSet("csi-olm", "mirror.example:5000/", mirror.List(cfg))
	if err != nil {
		t.Fatal(err)
	}
	want := []configv1.ImageDigestMirrors{
		{Source: "quay.io/csi-olm/a", Mirrors: []configv1.ImageMirror{"mirror.example:5000/csi-olm/a"}},
		{Source: "quay.io/csi-olm/a-bundle", Mirrors: []configv1.ImageMirror{"mirror.example:5000/csi-olm/a-bundle"}},
	}
	got, _ := yaml.Marshal(set.Spec.ImageDigestMirrors)
	wantYAML, _ := yaml.Marshal(want)
	if !bytes.Equal(got, wantYAML) || set.Kind != "ImageDigestMirrorSet" || set.APIVersion != "config.openshift.io/v1" || set.Name != "csi-olm" {
		t.Errorf("ImageDigestMirrorSet = %s %s %s\n%s\nwant\n%s", set.APIVersion, set.Kind, set.Name, got, wantYAML)
	}
}

func TestImageSetNamesEveryPackageAndChannel(t *testing.T) {
	got, err := yaml.Marshal(mirror.ImageSet("quay.io/csi-olm/certified-catalog@"+bundleDigest, catalog()))
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: quay.io/csi-olm/certified-catalog@` + bundleDigest + `
    packages:
    - channels:
      - name: preview
      - name: stable
      name: aws-efs-operator
`
	if string(got) != want {
		t.Errorf("ImageSetConfiguration:\n%s\nwant\n%s", got, want)
	}
}

// TestImagesOnTheCommittedCatalog runs the verb's action on the development catalogs, whose
// images are release tags: it lists those of every minor, and refuses an ImageDigestMirrorSet.
func TestImagesOnTheCommittedCatalog(t *testing.T) {
	var out bytes.Buffer
	a := mirror.Images{Catalog: "../certified", Format: mirror.FormatList, Out: &out}
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"quay.io/csi-olm/aws-efs-csi-driver-operator:v4.11.0\n", "quay.io/csi-olm/aws-efs-csi-driver-operator:v4.9.0\n", "quay.io/openshift/origin-csi-livenessprobe:4.10\n"} {
		if strings.Count(out.String(), want) != 1 {
			t.Errorf("the list of the tree lacks %q, or has it twice:\n%s", want, out.String())
		}
	}
	a = mirror.Images{Catalog: "../certified", Format: mirror.FormatIDMS, Mirror: "mirror.example", Out: &out}
	if err := a.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "quay.io/csi-olm/aws-efs-csi-driver-operator:v4.11.0 (aws-efs-csi-driver-operator.v4.11.0: ") {
		t.Errorf("idms on tags: %v", err)
	}
	for _, bad := range []mirror.Images{
		{Catalog: "../certified", Format: mirror.FormatIDMS},
		{Catalog: "../certified", Format: mirror.FormatImageSet},
		{Catalog: "../certified", Format: mirror.FormatImageSet, CatalogImage: "quay.io/csi-olm/certified-catalog:v4.11"},
		{Catalog: "../certified", Format: "csv"},
		{Catalog: "../nowhere", Format: mirror.FormatList},
	} {
		bad.Out = &out
		if err := bad.Run(context.Background()); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
