package definition

import (
	"slices"

	"github.com/csi-olm/csi-olm/internal/openshift"
)

// What a release's OpenShift minor decides. A release declares the minor once (Release.OpenShift);
// its bundle's com.redhat.openshift.versions, olm.maxOpenShiftVersion and minKubeVersion, and the
// catalogs it is published in, all follow from it here, so that they cannot disagree.

// minor is the release's OpenShift minor, or false when it declares none or an invalid one
// (which Validate reports).
func (r Release) minor() (openshift.Minor, bool) {
	if r.OpenShift == "" {
		return openshift.Minor{}, false
	}
	m, err := openshift.ParseMinor(r.OpenShift)
	return m, err == nil
}

// MaxOpenShiftVersion is the newest OpenShift minor the release runs on, the one after its own:
// OLM keeps a cluster that has it installed from upgrading past it (olm.maxOpenShiftVersion).
// Empty for a release not versioned with OpenShift.
func (r Release) MaxOpenShiftVersion() string {
	if m, ok := r.minor(); ok {
		return m.Next().String()
	}
	return ""
}

// OpenShiftVersionsOf is the release's com.redhat.openshift.versions: only its own minor's
// index, or the operator's range.
func (o *Operator) OpenShiftVersionsOf(r Release) string {
	if m, ok := r.minor(); ok {
		return openshift.Only(m).String()
	}
	return o.OpenShiftVersions
}

// MinKubeVersionOf is the release's minKubeVersion: its minor's Kubernetes, or the operator's.
func (o *Operator) MinKubeVersionOf(r Release) string {
	if m, ok := r.minor(); ok {
		return m.KubeVersion().String()
	}
	return o.MinKubeVersion
}

// indexes is the release's com.redhat.openshift.versions, parsed; false when it has none or an
// invalid one (which Validate reports).
func (o *Operator) indexes(r Release) (openshift.Versions, bool) {
	s := o.OpenShiftVersionsOf(r)
	if s == "" {
		return openshift.Versions{}, false
	}
	v, err := openshift.ParseVersions(s)
	return v, err == nil
}

// NewestMinor is the newest OpenShift minor any release names, as its own minor or as the end of
// its range: the last index the project's catalogs are built for. An open range ("v4.5", every
// minor from 4.5) reaches up to it.
func NewestMinor(ops []Operator) (openshift.Minor, bool) {
	var newest openshift.Minor
	found := false
	for i := range ops {
		for _, r := range ops[i].Releases {
			v, ok := ops[i].indexes(r)
			if !ok {
				continue
			}
			last := v.From
			if v.To != nil {
				last = *v.To
			}
			if !found || newest.Less(last) {
				newest, found = last, true
			}
		}
	}
	return newest, found
}

// CatalogMinors lists, per catalog, the OpenShift minors whose index holds at least one release,
// oldest first.
func CatalogMinors(ops []Operator) map[Catalog][]openshift.Minor {
	out := map[Catalog][]openshift.Minor{}
	newest, ok := NewestMinor(ops)
	if !ok {
		return out
	}
	for i := range ops {
		o := &ops[i]
		for _, r := range o.Releases {
			v, ok := o.indexes(r)
			if !ok {
				continue
			}
			for _, m := range v.Through(newest) {
				if !slices.Contains(out[o.Catalog], m) {
					out[o.Catalog] = append(out[o.Catalog], m)
				}
			}
		}
	}
	for c := range out {
		slices.SortFunc(out[c], openshift.Minor.Compare)
	}
	return out
}

// ReleasesIn lists the operator's releases that minor m's index holds, as OpenShift's pipeline
// picks them by com.redhat.openshift.versions.
func (o *Operator) ReleasesIn(m openshift.Minor) []Release {
	var out []Release
	for _, r := range o.Releases {
		if v, ok := o.indexes(r); ok && v.Contains(m) {
			out = append(out, r)
		}
	}
	return out
}
