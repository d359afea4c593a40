package render_test

import (
	"path/filepath"
	"testing"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// TestServedCatalogsAnswerAsDefined serves each minor's catalog with the real opm and asks it,
// over operator-registry's gRPC registry API, for its packages and channel heads.
func TestServedCatalogsAnswerAsDefined(t *testing.T) {
	opm := testutil.Opm(t)
	for catalog, minors := range definition.CatalogMinors(drivers.All()) {
		for _, m := range minors {
			dir := tree.Path(filepath.Join("..", string(catalog)), m)
			testutil.CheckServedCatalog(t, testutil.ServeCatalog(t, opm, dir), catalog, m, drivers.All())
		}
	}
}
