package validation

import (
	"fmt"
	"maps"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/csi-olm/csi-olm/catalog/index"
	"github.com/csi-olm/csi-olm/internal/openshift"
)

// minorProblems checks that each bundle of the index of an OpenShift minor runs on a cluster at
// that minor: OLM refuses to install a CSV whose minKubeVersion is newer than the cluster's
// Kubernetes, and reports a cluster not upgradeable while a CSV's olm.maxOpenShiftVersion is
// below the next minor, or cannot be read (index.Limits).
func (idx *catalogIndex) minorProblems(m openshift.Minor) []Problem {
	var problems []Problem
	for _, p := range idx.m.Packages() {
		for _, name := range slices.Sorted(maps.Keys(p.Bundles)) {
			b := p.Bundles[name]
			l := index.Limits(b.Decl)
			problem := func(format string, args ...any) {
				problems = append(problems, Problem{
					File: idx.c.file(declcfg.SchemaBundle, p.Name, b.Name), Level: Error, Check: "openshift",
					Package: p.Name, Bundle: b.Name, Message: fmt.Sprintf(format, args...),
				})
			}
			if l.Err != nil {
				problem("%v: OLM would keep a cluster at %s from upgrading while it is installed", l.Err, m)
			}
			if l.Max != nil && l.Max.Less(m) {
				problem("%s is %s, below the %s index it is in: a cluster at %s could install it and not upgrade until it is gone",
					openshift.MaxVersionProperty, l.Max, m.Index(), m)
			}
			if kube := m.KubeVersion(); l.MinKube != nil && kube.LT(*l.MinKube) {
				problem("minKubeVersion %s is newer than OpenShift %s's Kubernetes %s: OLM would not install it from the %s index",
					l.MinKube, m, kube, m.Index())
			}
		}
	}
	return problems
}
