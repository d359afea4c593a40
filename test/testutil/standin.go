package testutil

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/csi-olm/csi-olm/images"
)

// StandInImage is a small image that stands in for a third-party image on one platform: its only
// file names what it stands for, so every stand-in has its own digest, none of them invented.
func StandInImage(tb testing.TB, ref string, p v1.Platform) v1.Image {
	tb.Helper()
	layer, err := images.Layer([]images.File{{Path: "/stand-in", Mode: 0o644, Data: []byte(ref + " " + p.String() + "\n")}})
	if err != nil {
		tb.Fatal(err)
	}
	img, err := images.Image(nil, images.Config{Platform: p}, layer)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}
