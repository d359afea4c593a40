package openshift

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
)

// kubeTable holds the Kubernetes each OpenShift release ships, as clusters report it, with
// where each row comes from.
//
//go:embed kubernetes.tsv
var kubeTable string

// Release is an OpenShift release and the Kubernetes it ships.
type Release struct {
	OpenShift semver.Version
	Kube      semver.Version
	// Source says where the row comes from.
	Source string
}

func (r Release) String() string { return fmt.Sprintf("%s (Kubernetes %s)", r.OpenShift, r.Kube) }

var releases = sync.OnceValues(func() (map[Minor][]Release, error) { return parseKubeTable(kubeTable) })

// parseKubeTable reads the table, every malformed or out-of-order row reported.
func parseKubeTable(table string) (map[Minor][]Release, error) {
	out := map[Minor][]Release{}
	var problems []string
	for i, line := range strings.Split(table, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("line %d: %s", i+1, fmt.Sprintf(format, args...)))
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 || fields[2] == "" {
			bad("want openshift, kubernetes and source, tab-separated")
			continue
		}
		ocp, err1 := semver.Parse(fields[0])
		kube, err2 := semver.Parse(fields[1])
		if err := errors.Join(err1, err2); err != nil {
			bad("%v", err)
			continue
		}
		m := Minor{int(ocp.Major), int(ocp.Minor)}
		if want := m.KubeVersion(); kube.Major != want.Major || kube.Minor != want.Minor {
			bad("OpenShift %s ships Kubernetes %d.%d, not %s", ocp, want.Major, want.Minor, kube)
			continue
		}
		if prev := out[m]; len(prev) > 0 {
			last := prev[len(prev)-1]
			if !last.OpenShift.LT(ocp) || kube.LT(last.Kube) {
				bad("%s after %s: rows go up by release, and a later release never ships an older Kubernetes", ocp, last)
				continue
			}
		}
		out[m] = append(out[m], Release{OpenShift: ocp, Kube: kube, Source: fields[2]})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the table of OpenShift releases' Kubernetes:\n%s", strings.Join(problems, "\n"))
	}
	return out, nil
}

// cmpMinor compares two versions' major and minor.
func cmpMinor(a, b semver.Version) int {
	if a.Major != b.Major {
		return cmp.Compare(a.Major, b.Major)
	}
	return cmp.Compare(a.Minor, b.Minor)
}

// Releases are the minor's releases whose Kubernetes is known, oldest first.
func (m Minor) Releases() []Release {
	r, err := releases()
	if err != nil {
		// The table is part of the binary and a test reads it: a malformed one never ships.
		panic(err)
	}
	return slices.Clone(r[m])
}

// Fit says which releases of a minor can install a bundle, by its minKubeVersion. OLM installs a
// CSV only on a cluster whose Kubernetes, patch included, is at least the CSV's minKubeVersion,
// and every OpenShift minor's z-stream moves its Kubernetes up patch by patch.
type Fit int

const (
	// FitsAll: every release of the minor can.
	FitsAll Fit = iota
	// FitsFrom: the minor's first releases cannot; From can, and every later one.
	FitsFrom
	// FitsNoneKnown: the bundle wants the minor's Kubernetes at a patch above that of every
	// release known; a later z-stream may ship it.
	FitsNoneKnown
	// FitsNone: the bundle wants a later Kubernetes minor; no release of the minor can.
	FitsNone
)

// KubeFit is a minor's Fit for a minKubeVersion, with the releases that say so.
type KubeFit struct {
	Fit     Fit
	Minor   Minor
	MinKube semver.Version
	// From is the first release known to install the bundle (FitsFrom); Newest the newest
	// release known (FitsNoneKnown), nil when none of the minor's is.
	From, Newest *Release
}

// FitKube judges minKubeVersion at the minor.
func (m Minor) FitKube(minKube semver.Version) KubeFit {
	f := KubeFit{Minor: m, MinKube: minKube}
	kube := m.KubeVersion()
	if c := cmpMinor(minKube, kube); c != 0 {
		if c > 0 {
			f.Fit = FitsNone
		}
		return f
	}
	rs := m.Releases()
	if len(rs) == 0 {
		// Every release ships at least the minor's x.y.0.
		if !kube.LT(minKube) {
			return f
		}
		f.Fit = FitsNoneKnown
		return f
	}
	for i, r := range rs {
		if !r.Kube.LT(minKube) {
			if i > 0 {
				f.Fit, f.From = FitsFrom, &rs[i]
			}
			return f
		}
	}
	f.Fit, f.Newest = FitsNoneKnown, &rs[len(rs)-1]
	return f
}

// Why says, for a bundle in the minor's index, which clusters cannot install it and why; "" for
// FitsAll.
func (f KubeFit) Why() string {
	switch f.Fit {
	case FitsFrom:
		return fmt.Sprintf("minKubeVersion %s is newer than the Kubernetes of OpenShift %s's first releases: %s is the first release known to ship it, and OLM would not install the bundle on a cluster at an earlier %s release",
			f.MinKube, f.Minor, f.From, f.Minor)
	case FitsNoneKnown:
		if f.Newest == nil {
			return fmt.Sprintf("minKubeVersion %s is newer than Kubernetes %s, and no OpenShift %s release's Kubernetes patch is known here: OLM would install the bundle only on a release that ships %s or later",
				f.MinKube, f.Minor.KubeVersion(), f.Minor, f.MinKube)
		}
		return fmt.Sprintf("minKubeVersion %s is newer than the Kubernetes of every OpenShift %s release known, up to %s: OLM would install the bundle only on a later z-stream that ships %s or later",
			f.MinKube, f.Minor, f.Newest, f.MinKube)
	case FitsNone:
		return fmt.Sprintf("minKubeVersion %s is newer than OpenShift %s's Kubernetes %d.%d: OLM would not install the bundle on any %s release",
			f.MinKube, f.Minor, f.Minor.KubeVersion().Major, f.Minor.KubeVersion().Minor, f.Minor)
	}
	return ""
}
