package release_test

import (
	"context"
	"io"
	"testing"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/images/registry"
	"github.com/csi-olm/csi-olm/release"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// BenchmarkPushImages builds every bundle and catalog image of the tree and pushes them to the
// loopback registry, warm: after the first round the registry already holds every blob, as it
// does when a pipeline republishes.
func BenchmarkPushImages(b *testing.B) {
	addr := testutil.StartRegistry(b)
	a := &release.Images{
		Version: "bench", OPM: testutil.Opm(b), GRPCHealthProbe: testutil.GRPCHealthProbe(b), Bundles: "../bundle", Catalogs: "../catalog",
		Registry: addr + "/csi-olm", Client: &registry.Client{}, Out: io.Discard,
	}
	ctx := context.Background()
	if err := a.Run(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := a.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPin pins every image of every release, as `csi-olm release` does, against stand-ins
// in the loopback registry; Sequential is the baseline of one image after another.
func BenchmarkPin(b *testing.B) {
	addr := testutil.StartRegistry(b)
	c := &registry.Client{Mirrors: mirrors(addr)}
	operators := drivers.All()
	pushStandIns(b, c, operators)
	wants := release.Wants(operators)
	ctx := context.Background()
	b.Run("PinAll", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.PinAll(ctx, wants); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(wants)), "µs/image")
	})
	b.Run("Sequential", func(b *testing.B) {
		for b.Loop() {
			for _, w := range wants {
				if _, err := c.Pin(ctx, w.Ref, w.Platforms...); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(wants)), "µs/image")
	})
}
