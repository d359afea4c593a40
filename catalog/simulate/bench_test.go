package simulate_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

// fieldCatalogs writes the field catalog and the catalog that provides its dependencies.
func fieldCatalogs(tb testing.TB) (field, deps string) {
	tb.Helper()
	dir := tb.TempDir()
	field, deps = filepath.Join(dir, synthcatalog.FieldCatalog), filepath.Join(dir, synthcatalog.FieldDepsCatalog)
	if err := synthcatalog.WriteFieldCatalogs(field, deps); err != nil {
		tb.Fatal(err)
	}
	return field, deps
}

// BenchmarkSimulateAllField is `catalog simulate --all` over the field catalog (40 packages, 805
// bundles, 1,050 starts) with its dependencies' catalog beside it: every start is resolved.
func BenchmarkSimulateAllField(b *testing.B) {
	field, deps := fieldCatalogs(b)
	for b.Loop() {
		a := &simulate.Simulate{Catalog: field, All: true, Environment: predict.Environment{Catalogs: []string{deps}}, Output: "text", Out: io.Discard}
		if err := a.Run(context.Background()); err != nil {
			b.Fatalf("error %v: want every start resolved, the needs of each met", err)
		}
	}
}

// BenchmarkSimulateV1AllField is `catalog simulate --olm v1 --all` over the field catalog, its
// dependencies' catalog beside it as a second ClusterCatalog: every package's new
// ClusterExtension and every bundle installed (845 starts), each walked to where
// operator-controller settles, catalogs read and indexed included.
func BenchmarkSimulateV1AllField(b *testing.B) {
	field, deps := fieldCatalogs(b)
	for b.Loop() {
		a := &simulate.Simulate{OLM: "v1", Catalog: field, All: true, Environment: predict.Environment{Catalogs: []string{deps}}, Output: "text", Out: io.Discard}
		var ue *simulate.UnresolvableError
		if err := a.Run(context.Background()); !errors.As(err, &ue) {
			b.Fatalf("error %v: want the starts of the packages that declare dependencies unresolvable", err)
		}
	}
}
