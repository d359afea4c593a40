package openshift

import (
	"strings"
	"testing"
)

func minor(t *testing.T, s string) Minor {
	t.Helper()
	m, err := ParseMinor(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// com.redhat.openshift.versions as OpenShift's pipeline reads it: the indexes a bundle goes into.
func TestVersionsSelectIndexes(t *testing.T) {
	tests := []struct {
		value string
		// selected lists the minors from 4.4 to 4.12 the value puts the bundle into.
		selected string
	}{
		{"v4.9", "4.9 4.10 4.11 4.12"},
		{"=v4.9", "4.9"},
		{"v4.9-v4.10", "4.9 4.10"},
		{"v4.5-v4.5", "4.5"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			v, err := ParseVersions(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for m := minor(t, "4.4"); !minor(t, "4.12").Less(m); m = m.Next() {
				if v.Contains(m) {
					got = append(got, m.String())
				}
			}
			if strings.Join(got, " ") != tt.selected {
				t.Errorf("selects %v, want %s", got, tt.selected)
			}
			var through []string
			for _, m := range v.Through(minor(t, "4.12")) {
				through = append(through, m.String())
			}
			if strings.Join(through, " ") != tt.selected {
				t.Errorf("Through(4.12) = %v, want %s", through, tt.selected)
			}
			if v.String() != tt.value {
				t.Errorf("String() = %q", v.String())
			}
		})
	}
}

func TestParseVersionsRefusesWhatThePipelineDoesNotRead(t *testing.T) {
	for value, want := range map[string]string{
		"4.9":         `"4.9" does not start with v`,
		"=4.9":        `"4.9" is not v4.N`,
		"v4.10-v4.9":  "the range ends before it starts",
		"v4.9-4.10":   `"4.10" does not start with v`,
		"v4.x":        `"v4.x" is not an OpenShift minor`,
		"v3.11":       `"v3.11" is not an OpenShift 4 or 5 minor`,
		"":            `does not start with v`,
		"v4.9,v4.10":  `is not an OpenShift minor`,
		"=v4.9-v4.10": `is not v4.N`,
	} {
		_, err := ParseVersions(value)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "com.redhat.openshift.versions") {
			t.Errorf("ParseVersions(%q) = %v, want an error saying %q", value, err, want)
		}
	}
}

func TestMinor(t *testing.T) {
	m := minor(t, "v4.11")
	if m.String() != "4.11" || m.Index() != "v4.11" || m.Next().String() != "4.12" || m.KubeVersion().String() != "1.24.0" {
		t.Errorf("4.11: %s %s next %s kube %s", m, m.Index(), m.Next(), m.KubeVersion())
	}
	// The Kubernetes each OpenShift minor ships, from OpenShift's release notes.
	for ocp, kube := range map[string]string{"4.9": "1.22.0", "4.12": "1.25.0", "4.16": "1.29.0", "4.20": "1.33.0"} {
		if got := minor(t, ocp).KubeVersion().String(); got != kube {
			t.Errorf("OpenShift %s ships Kubernetes %s, not %s", ocp, kube, got)
		}
	}
	got, err := MinorOf("4.11.3")
	if err != nil || got != m {
		t.Errorf("MinorOf(4.11.3) = %v, %v", got, err)
	}
	if _, err := MinorOf("latest"); err == nil {
		t.Error("MinorOf(latest) gave no error")
	}
}

// olm.maxOpenShiftVersion read and judged as OLM's olm-operator does
// (pkg/controller/operators/openshift/helpers.go).
func TestMaxVersionAsOLMJudgesIt(t *testing.T) {
	for value, want := range map[string]string{
		`"4.12"`:   "4.12",
		`4.12`:     "4.12",
		`"v4.12"`:  "4.12",
		`"4.12.0"`: "4.12",
		`"5.0"`:    "5.0",
	} {
		got, err := ParseMaxVersion(value)
		if err != nil || got.String() != want {
			t.Errorf("ParseMaxVersion(%s) = %v, %v; want %s", value, got, err, want)
		}
	}
	for value, want := range map[string]string{
		`""`:       "is empty",
		`"4.12.1"`: "must name only <major>.<minor>",
		`"four"`:   "is not a version",
	} {
		if _, err := ParseMaxVersion(value); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMaxVersion(%s) = %v, want an error saying %q", value, err, want)
		}
	}
	tests := []struct {
		current, max string
		blocks       bool
	}{
		{"4.10", "4.11", false}, // the next minor is the max: allowed
		{"4.10", "4.12", false},
		{"4.11", "4.11", true}, // at the max: the next minor is past it
		{"4.12", "4.11", true}, // already past it
		{"4.22", "4.23", false},
		{"4.22", "5.0", false}, // 4.23 and 5.0 are one release
		{"4.23", "5.0", true},
		{"4.23", "5.1", false},
	}
	for _, tt := range tests {
		if got := BlocksUpgrade(minor(t, tt.current), minor(t, tt.max)); got != tt.blocks {
			t.Errorf("a cluster at %s with an operator whose max is %s: blocked %v, want %v", tt.current, tt.max, got, tt.blocks)
		}
	}
}

func TestIndexOfImage(t *testing.T) {
	const digest = "@sha256:4b0f8e2b0a4d5e2f3c1a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e"
	for _, tc := range []struct {
		image string
		want  string // "" when the image names no minor
	}{
		{"registry.redhat.io/redhat/redhat-operator-index:v4.11", "4.11"},
		{"localhost:5000/csi-olm/certified-catalog:v4.9" + digest, "4.9"},
		{"quay.io/org/catalog:v5.0", "5.0"},
		{"quay.io/org/catalog" + digest, ""},
		{"quay.io/org/catalog:latest", ""},
		{"quay.io/org/catalog:4.11", ""}, // a sidecar's tag, not an index's
		{"quay.io/org/catalog:v3.11", ""},
		{"not a reference", ""},
	} {
		m, ok := IndexOfImage(tc.image)
		got := ""
		if ok {
			got = m.String()
		}
		if got != tc.want {
			t.Errorf("IndexOfImage(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
}
