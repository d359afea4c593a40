package validation_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/csi-olm/csi-olm/catalog/validation"
)

// FuzzLoadAndValidate feeds arbitrary files to the loader and every check, alone and as the
// community side of a cross-catalog check: whatever the input, they report problems and never
// panic. CI runs it briefly (`make fuzz`).
func FuzzLoadAndValidate(f *testing.F) {
	f.Add([]byte(demo))
	f.Add([]byte(community))
	f.Add([]byte("schema: olm.channel\npackage: demo\nname: stable\nentries: [{name: a, replaces: a, skips: [a], skipRange: '>=0.0.0'}]\n"))
	f.Add([]byte("{\"schema\":\"olm.deprecations\",\"package\":\"demo\",\"entries\":[{\"reference\":{\"schema\":\"olm.bundle\"}}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		c, _ := validation.Load(ctx, fstest.MapFS{"p/catalog.yaml": {Data: data}, "demo/catalog.yaml": {Data: []byte(demo)}}, "fuzz")
		other, _ := validation.Load(ctx, fstest.MapFS{"c.yaml": {Data: data}}, "other")
		bundles := &validation.BundleSource{FS: fstest.MapFS{}, Dir: "bundles"}
		validation.Check(c, validation.Options{Community: other, Bundles: bundles})
		validation.Check(other, validation.Options{Community: c})
	})
}
