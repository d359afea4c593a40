// Package openshift is the one home of OpenShift's minor versions as bundles and catalogs name
// them: the minor a release is built for (4.11), the index a catalog is built for (v4.11), the
// bundle annotation com.redhat.openshift.versions that picks the indexes a bundle goes into, and
// the Kubernetes minor each OpenShift minor ships.
package openshift

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
)

// Minor is an OpenShift minor version, 4.N.
type Minor struct {
	Major, Minor int
}

var minorPattern = regexp.MustCompile(`^v?(\d+)\.(\d+)$`)

// ParseMinor reads "4.11" or "v4.11".
func ParseMinor(s string) (Minor, error) {
	m := minorPattern.FindStringSubmatch(s)
	if m == nil {
		return Minor{}, fmt.Errorf("%q is not an OpenShift minor such as 4.11 or v4.11", s)
	}
	major, err1 := strconv.Atoi(m[1])
	minor, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || major < 4 || major > 5 {
		return Minor{}, fmt.Errorf("%q is not an OpenShift 4 or 5 minor", s)
	}
	return Minor{major, minor}, nil
}

// MinorOf is the minor of a full OpenShift version such as ClusterVersion's "4.11.3".
func MinorOf(version string) (Minor, error) {
	v, err := semver.ParseTolerant(version)
	if err != nil {
		return Minor{}, fmt.Errorf("%q is not an OpenShift version: %w", version, err)
	}
	return ParseMinor(fmt.Sprintf("%d.%d", v.Major, v.Minor))
}

// String is the minor as olm.maxOpenShiftVersion and image tags write it: "4.11".
func (m Minor) String() string { return fmt.Sprintf("%d.%d", m.Major, m.Minor) }

// Index is the minor as index tags and catalog directories name it: "v4.11".
func (m Minor) Index() string { return "v" + m.String() }

// Next is the minor a cluster upgrades to.
func (m Minor) Next() Minor { return Minor{m.Major, m.Minor + 1} }

// Less orders minors.
func (m Minor) Less(o Minor) bool {
	return m.Major < o.Major || m.Major == o.Major && m.Minor < o.Minor
}

// Compare is Less as a three-way comparison, for slices.SortFunc.
func (m Minor) Compare(o Minor) int {
	switch {
	case m.Less(o):
		return -1
	case o.Less(m):
		return 1
	}
	return 0
}

// KubeVersion is the Kubernetes release OpenShift 4.N is built on, 1.(N+13).0: 4.9 ships
// Kubernetes 1.22, 4.12 ships 1.25. It is what a bundle built for the minor sets as minKubeVersion.
func (m Minor) KubeVersion() semver.Version {
	return semver.Version{Major: 1, Minor: uint64(m.Minor + 13)}
}

// Versions is a com.redhat.openshift.versions value: the indexes OpenShift's pipeline puts a
// bundle into. "v4.9" is 4.9 and every later minor, "=v4.9" only 4.9, "v4.9-v4.11" a range.
type Versions struct {
	From Minor
	// To is the last minor; nil for every later one.
	To  *Minor
	raw string
}

// ParseVersions reads a com.redhat.openshift.versions value.
func ParseVersions(s string) (Versions, error) {
	bad := func(err error) (Versions, error) {
		return Versions{}, fmt.Errorf("com.redhat.openshift.versions %q: %w (want v4.N, =v4.N or v4.N-v4.M)", s, err)
	}
	if exact, ok := strings.CutPrefix(s, "="); ok {
		m, err := ParseMinor(exact)
		if err != nil || !strings.HasPrefix(exact, "v") {
			return bad(fmt.Errorf("%q is not v4.N", exact))
		}
		return Versions{From: m, To: &m, raw: s}, nil
	}
	from, to, isRange := strings.Cut(s, "-")
	if !strings.HasPrefix(from, "v") {
		return bad(fmt.Errorf("%q does not start with v", from))
	}
	lo, err := ParseMinor(from)
	if err != nil {
		return bad(err)
	}
	if !isRange {
		return Versions{From: lo, raw: s}, nil
	}
	if !strings.HasPrefix(to, "v") {
		return bad(fmt.Errorf("%q does not start with v", to))
	}
	hi, err := ParseMinor(to)
	if err != nil {
		return bad(err)
	}
	if hi.Less(lo) {
		return bad(fmt.Errorf("the range ends before it starts"))
	}
	return Versions{From: lo, To: &hi, raw: s}, nil
}

// Only is the value for one minor, "=v4.N".
func Only(m Minor) Versions { return Versions{From: m, To: &m, raw: "=" + m.Index()} }

// String is the annotation's value.
func (v Versions) String() string { return v.raw }

// Contains says whether the bundle goes into minor m's index.
func (v Versions) Contains(m Minor) bool {
	return !m.Less(v.From) && (v.To == nil || !v.To.Less(m))
}

// Through lists the minors of v up to last, the newest index a project builds.
func (v Versions) Through(last Minor) []Minor {
	var out []Minor
	for m := v.From; !last.Less(m); m = m.Next() {
		if v.Contains(m) {
			out = append(out, m)
		}
	}
	return out
}

// MaxVersionProperty is the bundle property that caps the cluster's OpenShift minor while the
// bundle is installed.
const MaxVersionProperty = "olm.maxOpenShiftVersion"

// ParseMaxVersion reads an olm.maxOpenShiftVersion value as OLM's olm-operator does: quotes
// trimmed, a tolerant semantic version that must name only a major and a minor ("4.12").
func ParseMaxVersion(value string) (Minor, error) {
	v := strings.Trim(value, `"`)
	if v == "" {
		return Minor{}, fmt.Errorf("%s is empty", MaxVersionProperty)
	}
	sv, err := semver.ParseTolerant(v)
	if err != nil {
		return Minor{}, fmt.Errorf("%s %q is not a version: %w", MaxVersionProperty, v, err)
	}
	if sv.Patch != 0 || len(sv.Pre) > 0 || len(sv.Build) > 0 {
		return Minor{}, fmt.Errorf("%s must name only <major>.<minor>, not %s", MaxVersionProperty, sv)
	}
	return Minor{int(sv.Major), int(sv.Minor)}, nil
}

// normalized maps 4.23 to 5.0, which OLM treats as the same release.
func (m Minor) normalized() Minor {
	if m.Major == 4 && m.Minor == 23 {
		return Minor{5, 0}
	}
	return m
}

// BlocksUpgrade is OLM's rule for olm.maxOpenShiftVersion: an operator installed on a cluster at
// minor current, with that max version, makes OLM report the cluster not upgradeable to the next
// minor (ClusterOperator operator-lifecycle-manager, Upgradeable=False, reason
// IncompatibleOperatorsInstalled), when the next minor is past the max.
func BlocksUpgrade(current, max Minor) bool {
	return max.normalized().Less(current.normalized().Next())
}

// IndexOfImage is the minor a catalog image is the index of, by its tag as OpenShift names its
// indexes (redhat-operator-index:v4.11) and `csi-olm release` its catalog images. ok is false when
// the reference has no tag naming a minor, such as a reference by digest alone.
func IndexOfImage(image string) (m Minor, ok bool) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return Minor{}, false
	}
	tagged, isTagged := named.(reference.Tagged)
	if !isTagged || !strings.HasPrefix(tagged.Tag(), "v") {
		return Minor{}, false
	}
	m, err = ParseMinor(tagged.Tag())
	return m, err == nil
}
