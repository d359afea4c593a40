package clusterupgrade_test

import (
	"context"
	"testing"

	"github.com/csi-olm/csi-olm/catalog/clusterupgrade"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

// BenchmarkClusterUpgradeFieldTree follows every install of a tree of the field's shape through
// its ten cluster upgrades: 11 minors (4.12 to 4.22) of about 35 packages and 800 bundles each
// (test/synthcatalog's field tree). The goal is 30 s on 2 cores.
func BenchmarkClusterUpgradeFieldTree(b *testing.B) {
	root := b.TempDir()
	minors := synthcatalog.FieldTreeMinors()
	if err := synthcatalog.WriteFieldTree(root, len(minors)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := clusterupgrade.Check(context.Background(), root)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Steps) != len(minors)-1 {
			b.Fatalf("%d cluster upgrades followed, want %d", len(r.Steps), len(minors)-1)
		}
	}
}
