package validation

import (
	"fmt"
	"maps"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

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
			problemAt := func(level Level, rule, format string, args ...any) {
				problems = append(problems, Problem{
					File: idx.c.file(declcfg.SchemaBundle, p.Name, b.Name), Level: level, Rule: rule,
					Package: p.Name, Bundle: b.Name, Message: fmt.Sprintf(format, args...),
				})
			}
			if l.Err != nil {
				problemAt(Error, RuleMaxOpenShiftVersion, "%v: OLM would keep a cluster at %s from upgrading while it is installed", l.Err, m)
			}
			if l.Max != nil && l.Max.Less(m) {
				problemAt(Error, RuleMaxOpenShiftVersion, "%s is %s, below the %s index it is in: a cluster at %s could install it and not upgrade until it is gone",
					openshift.MaxVersionProperty, l.Max, m.Index(), m)
			}
			if l.MinKube != nil {
				// Only a bundle no release of the minor can install is wrong in its index; one
				// that needs a later z-stream is a warning, naming it.
				switch f := m.FitKube(*l.MinKube); f.Fit {
				case openshift.FitsNone:
					problemAt(Error, RuleKubeVersion, "%s, from the %s index", f.Why(), m.Index())
				case openshift.FitsFrom, openshift.FitsNoneKnown:
					problemAt(Warning, RuleKubeVersion, "%s", f.Why())
				}
			}
			if level, why := metadataFormat(b.Decl, m); why != "" {
				problemAt(level, RuleBundleMetadataFormat, "%s", why)
			}
		}
	}
	return problems
}

// csvMetadataFrom is the first minor whose index carries a bundle's CSV as olm.csv.metadata, not
// as olm.bundle.object: what the field's pipelines render from 4.17 on and require.
var csvMetadataFrom = openshift.Minor{Major: 4, Minor: 17}

// metadataFormat says how b's metadata is not in the form the field's pipelines require of the
// index of minor m ("" when it is). Both operator pipelines and Konflux refuse olm.bundle.object
// from 4.17 on: an error. Konflux alone also wants one olm.csv.metadata from 4.17 on and none
// before; OLM serves either (csi-olm's own published catalogs carry olm.csv.metadata at every
// minor, served by a current opm): warnings.
func metadataFormat(b *declcfg.Bundle, m openshift.Minor) (Level, string) {
	objects, metadata := 0, 0
	for _, p := range b.Properties {
		switch p.Type {
		case property.TypeBundleObject:
			objects++
		case property.TypeCSVMetadata:
			metadata++
		}
	}
	switch {
	case !m.Less(csvMetadataFrom) && objects > 0:
		return Error, fmt.Sprintf("has %d %s properties: the %s index, as every index from %s on, carries a bundle's CSV as one %s (opm render --migrate-level bundle-object-to-csv-metadata)",
			objects, property.TypeBundleObject, m.Index(), csvMetadataFrom.Index(), property.TypeCSVMetadata)
	case !m.Less(csvMetadataFrom) && metadata != 1:
		return Warning, fmt.Sprintf("has %d %s properties, not one: Konflux wants one in the %s index, as in every index from %s on", metadata, property.TypeCSVMetadata, m.Index(), csvMetadataFrom.Index())
	case m.Less(csvMetadataFrom) && metadata > 0:
		return Warning, fmt.Sprintf("has an %s property: Konflux wants none in indexes before %s, which carry a bundle's CSV as %s", property.TypeCSVMetadata, csvMetadataFrom.Index(), property.TypeBundleObject)
	}
	return "", ""
}
