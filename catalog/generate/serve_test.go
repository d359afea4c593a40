package generate_test

import (
	"path/filepath"
	"testing"

	d "github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// TestServedCatalogsAnswerAsDefined serves each catalog with the real opm and asks it, over
// operator-registry's gRPC registry API, for its packages and channel heads.
func TestServedCatalogsAnswerAsDefined(t *testing.T) {
	opm := testutil.Opm(t)
	for _, catalog := range []d.Catalog{d.Community, d.Certified} {
		testutil.CheckServedCatalog(t, testutil.ServeCatalog(t, opm, filepath.Join("..", string(catalog))), catalog, drivers.All())
	}
}
