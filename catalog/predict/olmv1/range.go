package olmv1

import (
	"regexp"

	"github.com/Masterminds/semver/v3"
)

// A ClusterExtension's spec.source.catalog.version is read twice before operator-controller
// picks a bundle: the API server checks it against the CRD's rules (64 characters, a CEL regular
// expression), and operator-controller parses it as a Masterminds/semver v3 constraint
// (compare.NewVersionRange in internal/operator-controller/catalogmetadata/compare). The second
// is the library itself, at the version operator-controller v1.11.0 links (v3.5.0), with its
// quirks, since they decide what operator-controller installs: "<=2.x" admits 2.9.0 but not
// 3.0.0, "<= *" nothing above 0.0.x, "^*" nothing but 0.0.0. range_test.go holds them.

// versionMaxLength is the CRD's maxLength of spec.source.catalog.version.
const versionMaxLength = 64

// versionExpression is the CRD's CEL rule for spec.source.catalog.version (self.matches(...),
// message "invalid version expression"), the API server's check. Its bracket slips are the
// CRD's: "[x|X|\*]" and "\*]" where a wildcard was meant, so some wildcard forms the controller
// reads are refused here first.
var versionExpression = regexp.MustCompile(`^(\s*(=||!=|>|<|>=|=>|<=|=<|~|~>|\^)\s*(v?(0|[1-9]\d*|[x|X|\*])(\.(0|[1-9]\d*|x|X|\*]))?(\.(0|[1-9]\d*|x|X|\*))?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)\s*)((?:\s+|,\s*|\s*\|\|\s*)(=||!=|>|<|>=|=>|<=|=<|~|~>|\^)\s*(v?(0|[1-9]\d*|x|X|\*])(\.(0|[1-9]\d*|x|X|\*))?(\.(0|[1-9]\d*|x|X|\*]))?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)\s*)*$`)

// versionRange is a parsed spec.source.catalog.version.
type versionRange struct{ c *semver.Constraints }

// parseVersionRange parses a constraint as operator-controller does; its errors are the
// library's, which operator-controller puts after `desired version range "..." is invalid: `.
func parseVersionRange(s string) (*versionRange, error) {
	c, err := semver.NewConstraint(s)
	if err != nil {
		return nil, err
	}
	return &versionRange{c}, nil
}

// CheckVersionRange says whether operator-controller reads s as a version range, with the
// library's error when it does not.
func CheckVersionRange(s string) error {
	_, err := parseVersionRange(s)
	return err
}

// contains says whether a bundle's version, read with blang/semver and written out again,
// satisfies the range, as operator-controller's InMastermindsSemverRange asks the library.
func (r *versionRange) contains(version string) bool {
	v, err := semver.NewVersion(version)
	return err == nil && r.c.Check(v)
}
