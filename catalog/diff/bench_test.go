package diff_test

import (
	"context"
	"io"
	"testing"

	"github.com/csi-olm/csi-olm/catalog/diff"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

// BenchmarkDiffBreakingField is `catalog diff --breaking` between two versions of the field
// catalog (40 packages, 805 bundles), the dependencies' catalog given, with one package changed
// (a release added) and with every package changed: a run as `make verify` or a release
// engineer's CI makes it, catalogs read and served included.
func BenchmarkDiffBreakingField(b *testing.B) {
	f := newField(b)
	all := make([]int, synthcatalog.FieldPackages)
	for i := range all {
		all[i] = i
	}
	for _, tc := range []struct {
		name    string
		changed []int
	}{{"one-changed", []int{20}}, {"all-changed", all}} {
		b.Run(tc.name, func(b *testing.B) {
			newDir := f.changed(b, release(tc.changed...))
			for b.Loop() {
				d := &diff.Diff{Old: f.old, New: newDir, Breaking: true, Output: "text", Out: io.Discard,
					Environment: simulateEnv(f)}
				if err := d.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDiffBreakingV1Field is BenchmarkDiffBreakingField with --olm v1: every bundle of the
// changed packages installed by a ClusterExtension naming its channel and by one naming none,
// walked with operator-controller's rule through both catalogs.
func BenchmarkDiffBreakingV1Field(b *testing.B) {
	f := newField(b)
	all := make([]int, synthcatalog.FieldPackages)
	for i := range all {
		all[i] = i
	}
	for _, tc := range []struct {
		name    string
		changed []int
	}{{"one-changed", []int{20}}, {"all-changed", all}} {
		b.Run(tc.name, func(b *testing.B) {
			newDir := f.changed(b, release(tc.changed...))
			for b.Loop() {
				d := &diff.Diff{Old: f.old, New: newDir, Breaking: true, OLM: "v1", Output: "text", Out: io.Discard,
					Environment: simulateEnv(f)}
				if err := d.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
