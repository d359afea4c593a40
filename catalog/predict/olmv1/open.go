package olmv1

import (
	"context"
	"fmt"
	"math"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/internal/option"
)

// Open reads the verb's catalogs and the environment's as ClusterCatalogs, in that order: the
// verb's with their own priority, the environment's with theirs. A catalog with load problems is
// refused, as OLM v0's simulator refuses it, and so are installed operators (RefuseInstalled).
// close removes what opening the environment's catalog images unpacked.
func Open(ctx context.Context, env predict.Environment, verbs ...predict.Catalog) (catalogs []Catalog, close func(), err error) {
	if err := RefuseInstalled(env); err != nil {
		return nil, nil, err
	}
	taken := make([]string, len(verbs))
	for i, c := range verbs {
		taken[i] = c.Name
	}
	cluster, err := env.Open(ctx, taken...)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range append(verbs, cluster.Catalogs...) {
		if c.Priority < math.MinInt32 || c.Priority > math.MaxInt32 {
			cluster.Close()
			return nil, nil, fmt.Errorf("catalog %s: priority %d is outside a ClusterCatalog's (a 32-bit integer)", c.Dir, c.Priority)
		}
		cfg, err := c.Read(ctx)
		if err != nil {
			cluster.Close()
			return nil, nil, err
		}
		catalogs = append(catalogs, Catalog{Name: c.Name, Priority: int32(c.Priority), Config: cfg})
	}
	return catalogs, cluster.Close, nil
}

// RefuseInstalled refuses the environment's installed operators, which only OLM v0 reads:
// operator-controller resolves no dependencies, so they change nothing.
func RefuseInstalled(env predict.Environment) error {
	const noDependencies = "operator-controller resolves no dependencies (it refuses a bundle that declares one), so what the cluster has installed does not change its choice: not with --olm v1"
	switch {
	case len(env.Packages) > 0:
		return option.Errorf("Environment.Packages", "%s", noDependencies)
	case len(env.APIs) > 0:
		return option.Errorf("Environment.APIs", "%s", noDependencies)
	}
	return nil
}
