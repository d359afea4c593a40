package openshift

import (
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

// The shipped table parses, and covers every minor of the field's public catalogs.
func TestKubeTableLoads(t *testing.T) {
	if _, err := parseKubeTable(kubeTable); err != nil {
		t.Fatal(err)
	}
	for n := 12; n <= 22; n++ {
		if rs := (Minor{4, n}).Releases(); len(rs) == 0 {
			t.Errorf("4.%d: no release in the table", n)
		}
	}
}

func TestKubeTableRefusesBadRows(t *testing.T) {
	_, err := parseKubeTable(strings.Join([]string{
		"# a comment",
		"4.16.2\t1.29.6\toc version",
		"4.16.1\t1.29.5\toc version", // older release after a newer one
		"4.16.7\t1.29.4\toc version", // older Kubernetes after a newer one
		"4.16.8\t1.30.1\toc version", // another minor's Kubernetes
		"4.16.9\t1.29.9",             // no source
		"4.16\t1.29.9\toc version",   // not a release
	}, "\n"))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"line 3: 4.16.1 after 4.16.2", "line 4: 4.16.7 after", "line 5: OpenShift 4.16.8 ships Kubernetes 1.29, not 1.30.1",
		"line 6: want openshift, kubernetes and source", "line 7: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestFitKube(t *testing.T) {
	v := semver.MustParse
	for _, tt := range []struct {
		minor, minKube string
		fit            Fit
		release        string // From or Newest
		why            string
	}{
		{"4.20", "1.32.9", FitsAll, "", ""},
		{"4.20", "1.33.0", FitsAll, "", ""},
		// The field's case: 1.33.5 is what 4.20's first known release ships.
		{"4.20", "1.33.5", FitsAll, "", ""},
		{"4.20", "1.33.6", FitsFrom, "4.20.16", "4.20.16 (Kubernetes 1.33.8) is the first release known to ship it"},
		{"4.20", "1.33.10", FitsFrom, "4.20.22", ""},
		{"4.20", "1.33.11", FitsNoneKnown, "4.20.22", "every OpenShift 4.20 release known, up to 4.20.22 (Kubernetes 1.33.10)"},
		{"4.16", "1.31.0", FitsNone, "", "minKubeVersion 1.31.0 is newer than OpenShift 4.16's Kubernetes 1.29: OLM would not install the bundle on any 4.16 release"},
		{"4.16", "2.0.0", FitsNone, "", ""},
		{"4.16", "0.9.0", FitsAll, "", ""},
		// A minor the table has no release of: only x.y.0 is sure.
		{"4.11", "1.24.0", FitsAll, "", ""},
		{"4.11", "1.24.1", FitsNoneKnown, "", "no OpenShift 4.11 release's Kubernetes patch is known here"},
	} {
		t.Run(tt.minor+"/"+tt.minKube, func(t *testing.T) {
			f := minor(t, tt.minor).FitKube(v(tt.minKube))
			if f.Fit != tt.fit {
				t.Errorf("fit %d, want %d", f.Fit, tt.fit)
			}
			var release string
			for _, r := range []*Release{f.From, f.Newest} {
				if r != nil {
					release = r.OpenShift.String()
				}
			}
			if release != tt.release {
				t.Errorf("release %q, want %q", release, tt.release)
			}
			if (f.Why() == "") != (tt.fit == FitsAll) || !strings.Contains(f.Why(), tt.why) {
				t.Errorf("why %q, want it to say %q", f.Why(), tt.why)
			}
		})
	}
}
