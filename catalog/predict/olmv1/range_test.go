package olmv1

import (
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

// The cases are Masterminds/semver v3.5.0's own (TestConstraintsCheck), the library
// operator-controller reads spec.source.catalog.version with, the versions written out in full
// as a bundle's are; and the quirks that decide what operator-controller installs.
func TestVersionRangeMatchesMasterminds(t *testing.T) {
	for _, tc := range []struct {
		constraint, version string
		want                bool
	}{
		{"*", "1.2.3", true},
		{"~0.0.0", "1.2.3", true},
		{"0.x.x", "1.2.3", false},
		{"0.0.x", "1.2.3", false},
		{"0.0.0", "1.2.3", false},
		{"^0.0.0", "1.2.3", false},
		{"= 2.0", "1.2.3", false},
		{"= 2.0", "2.0.0", true},
		{"4.1", "4.1.0", true},
		{"4.1.x", "4.1.3", true},
		{"1.x", "1.4.0", true},
		{"!=4.1", "4.1.0", false},
		{"!=4.1-alpha", "4.1.0-alpha", false},
		{"!=4.1-alpha", "4.1.1-alpha", false},
		{"!=4.1-alpha", "4.1.0", true},
		{"!=4.1", "5.1.0", true},
		{"!=4.x", "5.1.0", true},
		{"!=4.x", "4.1.0", false},
		{"!=4.1.x", "4.2.0", true},
		{"!=4.2.x", "4.2.3", false},
		{">1.1", "4.1.0", true},
		{">1.1", "1.1.0", false},
		{"<1.1", "0.1.0", true},
		{"<1.1", "1.1.0", false},
		{"<1.1", "1.1.1", false},
		{"<1.x", "1.1.1", false},
		{"<1.x", "0.1.1", true},
		{"<1.x", "2.0.0", false},
		{"<1.1.x", "1.2.1", false},
		{"<1.1.x", "1.1.500", false},
		{"<1.1.x", "1.0.500", true},
		{"<1.2.x", "1.1.1", true},
		{">=1.1", "4.1.0", true},
		{">=1.1", "4.1.0-beta", false},
		{">=1.1", "1.1.0", true},
		{">=1.1", "0.0.9", false},
		{"<=1.1", "0.1.0", true},
		{"<=1.1", "0.1.0-alpha", false},
		{"<=1.1-a", "0.1.0-alpha", true},
		{"<=1.1", "1.1.0", true},
		{"<=1.x", "1.1.0", true},
		{"<=2.x", "3.0.0", false},
		{"<=1.1", "1.1.1", true},
		{"<=1.1.x", "1.2.500", false},
		{"<=4.5", "3.4.0", true},
		{"<=4.5", "3.7.0", true},
		{"<=4.5", "4.6.3", false},
		{">1.1, <2", "1.1.1", false},
		{">1.1, <2", "1.2.1", true},
		{">1.1, <3", "4.3.2", false},
		{">=1.1, <2, !=1.2.3", "1.2.3", false},
		{">1.1 <2", "1.1.1", false},
		{">1.1 <2", "1.2.1", true},
		{">1.1    <3", "4.3.2", false},
		{">=1.1    <2    !=1.2.3", "1.2.3", false},
		{">=1.1, <2, !=1.2.3 || > 3", "4.1.2", true},
		{">=1.1, <2, !=1.2.3 || > 3", "3.1.2", false},
		{">=1.1, <2, !=1.2.3 || >= 3", "3.0.0", true},
		{">=1.1, <2, !=1.2.3 || > 3", "3.0.0", false},
		{">=1.1, <2, !=1.2.3 || > 3", "1.2.3", false},
		{"> 1.1, <     2", "1.1.1", false},
		{">   1.1, <2", "1.2.1", true},
		{">= 1.1 <2 != 1.2.3 || >= 3", "3.0.0", true},
		{">= 1.0.0  <= 2.0.0-beta", "1.0.1-beta", true},
		{">= 1.0.0  <= 2.0.0-beta", "1.0.1", true},
		{">= 1.0.0  <= 2.0.0-beta", "3.0.0", false},
		{">= 1.0.0  <= 2.0.0-beta || > 3", "1.0.1-beta", true},
		{">= 1.0.0  <= 2.0.0-beta || > 3", "3.0.1-beta", false},
		{">= 1.0.0  <= 2.0.0-beta != 1.0.1 || > 3", "1.0.1-beta", true},
		{">= 1.0.0  <= 2.0.0-beta != 1.0.1-beta || > 3", "1.0.1-beta", false},
		{">= 1.0.0-0  <= 2.0.0", "1.0.1-beta", true},
		{"1.1 - 2", "1.1.1", true},
		{"1.5.0 - 4.5", "3.7.0", true},
		{"1.1-3", "4.3.2", false},
		{"^1.1", "1.1.1", true},
		{"^1.1", "4.3.2", false},
		{"^1.x", "1.1.1", true},
		{"^2.x", "1.1.1", false},
		{"^1.x", "2.1.1", false},
		{"^1.x", "1.1.1-beta1", false},
		{"^1.1.2-alpha", "1.2.1-beta1", true},
		{"^1.2.x-alpha", "1.1.1-beta1", false},
		{"^0.0.1", "0.0.1", true},
		{"^0.0.1", "0.3.1", false},
		{"~*", "2.1.1", true},
		{"~1", "2.1.1", false},
		{"~1", "1.3.5", true},
		{"~1", "1.4.0", true},
		{"~1.x", "2.1.1", false},
		{"~1.x", "1.3.5", true},
		{"~1.1", "1.1.1", true},
		{"~1.1", "1.1.1-alpha", false},
		{"~1.1-alpha", "1.1.1-beta", true},
		{"~1.1.1-beta", "1.1.1-alpha", false},
		{"~1.1.1-beta", "1.1.1", true},
		{"~1.2.3", "1.2.5", true},
		{"~1.2.3", "1.2.2", false},
		{"~1.2.3", "1.3.2", false},
		{"~1.1", "1.2.3", false},
		{"~1.3", "2.4.5", false},
		{"1.0.0 - 2.0.0 <=2.0.0", "1.5.0", true},
		{"1.0.0 - 2.0.0, <=2.0.0", "1.5.0", true},
		// Build metadata never counts; a v prefix is read.
		{"v1.2.3", "1.2.3+7", true},
		{">=4.10.0+1", "4.10.0", true},
		// The quirks kept: "<= *" admits nothing above 0.0.x, "^*" nothing but 0.0.0.
		{"<= *", "1.0.0", false},
		{"<= *", "0.9.0", false},
		{"<= *", "0.0.9", true},
		{"^*", "0.0.1", false},
		{"^*", "0.0.0", true},
		// Pre-release numbers compare as numbers, below words.
		{">=0.2.2-rc.9", "0.2.2-rc.10", true},
		{"<0.2.2-rc.10", "0.2.2-rc.9", true},
		{">1.0.0-1", "1.0.0-alpha", true},
	} {
		r, err := parseVersionRange(tc.constraint)
		if err != nil {
			t.Errorf("%q: %v", tc.constraint, err)
			continue
		}
		if got := r.contains(semver.MustParse(tc.version).String()); got != tc.want {
			t.Errorf("%q contains %s: %v, want %v", tc.constraint, tc.version, got, tc.want)
		}
	}
}

func TestVersionRangeRefuses(t *testing.T) {
	for _, tc := range []struct{ constraint, want string }{
		{">=1.0 <<2", `improper constraint: ">=1.0 <<2"`},
		{"1.0 ||", `improper constraint: ""`},
		{"foo", `improper constraint: "foo"`},
		{"1.2.3-01", "constraint parser error"},
		{"1.2.3+a..b", `improper constraint: "1.2.3+a..b"`},
		{strings.Repeat("1.0.0 || ", 33) + "1.0.0", "too many constraint groups (max 32)"},
		{strings.Repeat(" ", 513), "constraint string is too long (max 512 bytes)"},
	} {
		if _, err := parseVersionRange(tc.constraint); err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %q", tc.constraint, err, tc.want)
		}
	}
}

// The API server's rule comes first: what it refuses never reaches operator-controller.
func TestVersionExpressionIsTheCRDs(t *testing.T) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{">=4.10.0, <5", true},
		{"4.11.x", true},
		{"~4.10", true},
		{"^0 || ^3 || ^5", true},
		{"1.2.3 - 2.3.4", false},
		{">=1.0 <<2", false},
		{"1.2.3-01", true},
		{"01.2.3", false},
		{"*", true},
		{"1.*", true},
		// The CRD's "\*]" slip: a wildcard minor followed by a patch is refused.
		{"1.*.3", false},
	} {
		if got := versionExpression.MatchString(tc.version); got != tc.ok {
			t.Errorf("%q: accepted %v, want %v", tc.version, got, tc.ok)
		}
	}
}
