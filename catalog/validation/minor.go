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
// Kubernetes, patch included (openshift.FitKube), and reports a cluster not upgradeable while a
// CSV's olm.maxOpenShiftVersion is
// below the next minor, or cannot be read (index.Limits).
func (idx *catalogIndex) minorProblems(m openshift.Minor) []Problem {
	var problems []Problem
	for _, p := range idx.m.Packages() {
		for _, name := range slices.Sorted(maps.Keys(p.Bundles)) {
			b := p.Bundles[name]
			l := index.Limits(b.Decl)
			problemAt := func(level Level, format string, args ...any) {
				problems = append(problems, Problem{
					File: idx.c.file(declcfg.SchemaBundle, p.Name, b.Name), Level: level, Check: "openshift",
					Package: p.Name, Bundle: b.Name, Message: fmt.Sprintf(format, args...),
				})
			}
			problem := func(format string, args ...any) { problemAt(Error, format, args...) }
			if l.Err != nil {
				problem("%v: OLM would keep a cluster at %s from upgrading while it is installed", l.Err, m)
			}
			if l.Max != nil && l.Max.Less(m) {
				problem("%s is %s, below the %s index it is in: a cluster at %s could install it and not upgrade until it is gone",
					openshift.MaxVersionProperty, l.Max, m.Index(), m)
			}
			if l.MinKube != nil {
				// Only a bundle no release of the minor can install is wrong in its index; one
				// that needs a later z-stream is a warning, naming it.
				switch f := m.FitKube(*l.MinKube); f.Fit {
				case openshift.FitsNone:
					problem("%s, from the %s index", f.Why(), m.Index())
				case openshift.FitsFrom, openshift.FitsNoneKnown:
					problemAt(Warning, "%s", f.Why())
				}
			}
		}
	}
	return problems
}
