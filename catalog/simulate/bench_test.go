package simulate_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

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
		a := &simulate.Simulate{Catalog: field, All: true, Environment: simulate.Environment{Catalogs: []string{deps}}, Output: "text", Out: io.Discard}
		var ue *simulate.UnresolvableError
		if err := a.Run(context.Background()); !errors.As(err, &ue) {
			b.Fatalf("error %v: want the starts of the package whose API nothing provides unresolvable", err)
		}
	}
}
