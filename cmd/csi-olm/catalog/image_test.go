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

// A registry with a certificate of its own authority is refused, and read with --ca-file or
// --skip-tls-verify, by every verb that reads catalog images.
func TestRegistryFlags(t *testing.T) {
	const dir = "../../../catalog/certified/v4.11"
	img, ca := testutil.PushCatalogImageTLS(t, dir, images.CatalogConfig(v1.Platform{OS: "linux", Architecture: "amd64"}), "v4.11")
	for _, verb := range []string{"validate", "graph", "images", "simulate", "diff"} {
		args := []string{verb, img}
		switch verb {
		case "simulate":
			args = append(args, "--all")
		case "diff":
			args = []string{verb, dir, img}
		}
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("%s without the registry's authority: %v, want a certificate error", verb, err)
		}
		for _, flag := range [][]string{{"--ca-file", ca}, {"--skip-tls-verify"}} {
			if out, err := run(t, append(args, flag...)...); err != nil {
				t.Errorf("%s %s: %v\n%s", verb, flag[0], err, out)
			}
		}
	}
	if _, err := run(t, "validate", img, "--ca-file", dir+"/aws-efs-operator/catalog.json"); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("--ca-file naming no PEM file: %v", err)
	}
}
