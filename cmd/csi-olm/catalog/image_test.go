package catalog

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// Every verb that reads a catalog takes a catalog image where it takes a directory, and says of
// it what it says of the directory the image was built from.
func TestVerbsReadCatalogImages(t *testing.T) {
	const dir = "../../../catalog/certified/v4.11"
	img := testutil.PushCatalogImage(t, dir, images.CatalogConfig(v1.Platform{OS: "linux", Architecture: "amd64"}), "v4.11")
	for _, tc := range []struct {
		verb string
		args func(catalog string) []string
	}{
		{"validate", func(c string) []string { return []string{"validate", c} }},
		{"graph", func(c string) []string { return []string{"graph", c, "-o", "mermaid"} }},
		{"images", func(c string) []string { return []string{"images", c} }},
		{"simulate", func(c string) []string { return []string{"simulate", c, "--all"} }},
		{"diff", func(c string) []string { return []string{"diff", dir, c} }},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			want, err := run(t, tc.args(dir)...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run(t, tc.args(img)...)
			if err != nil {
				t.Fatal(err)
			}
			// The reports name what they read, where they name it.
			if got = strings.ReplaceAll(got, img, dir); got != want {
				t.Errorf("from the image:\n%s\nwant, as from the directory:\n%s", got, want)
			}
		})
	}
}
