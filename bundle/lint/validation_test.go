package lint_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/lint"
)

const efsHead = "../aws-efs-operator/4.11.0"

var committed = []string{
	"../aws-efs-operator/0.0.6", "../aws-efs-operator/0.0.7", "../aws-efs-operator/0.0.8",
	"../aws-efs-operator/4.9.0", "../aws-efs-operator/4.10.0", efsHead,
	"../aws-ebs-csi-driver-operator/4.5.0", "../manila-csi-driver-operator/4.5.0",
}

func TestCommittedBundlesAreClean(t *testing.T) {
	explain := lint.ExplainerFor(drivers.All())
	explained := 0
	for _, dir := range committed {
		for _, p := range lint.Bundle(dir, lint.Options{Explain: explain}) {
			if p.Level == lint.Error || p.Explained == "" {
				t.Errorf("%s", p)
			} else {
				explained++
			}
		}
	}
	// The preview channel of EBS 4.5.0 carries one explained warning; each of the three EFS
	// releases two: the channel it names after its OpenShift minor, and the internal
	// RemovalFence CRD without an example.
	if explained != 7 {
		t.Errorf("%d explained warnings, want 7", explained)
	}
}

// TestReleaseModeDemandsDigests checks that the committed bundles, which reference release tags,
// fail a release check on every related image, and only on those.
func TestReleaseModeDemandsDigests(t *testing.T) {
	problems := lint.Bundle(efsHead, lint.Options{Explain: lint.ExplainerFor(drivers.All()), Release: true})
	var unpinned []string
	for _, p := range problems {
		if p.Level == lint.Error && strings.Contains(p.Message, "is not pinned by digest") {
			unpinned = append(unpinned, p.Message)
		} else if p.Level == lint.Error || p.Explained == "" {
			t.Errorf("unexpected: %s", p)
		}
	}
	// The operator image and the five operand images.
	if len(unpinned) != 6 {
		t.Errorf("%d unpinned images reported, want 6:\n%s", len(unpinned), strings.Join(unpinned, "\n"))
	}
}

// copyBundle copies a committed bundle into a temporary directory for a test to break.
func copyBundle(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "bundle")
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), raw, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

const csvFile = "manifests/aws-efs-csi-driver-operator.v4.11.0.clusterserviceversion.yaml"

type wantProblem struct {
	file, contains string
	level          lint.Level
}

func TestBrokenBundles(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   []wantProblem
	}{
		{
			name: "dockerfile label disagrees with annotations",
			break_: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "bundle.Dockerfile"), "channels.v1=stable", "channels.v1=fast")
			},
			want: []wantProblem{{"bundle.Dockerfile", `LABEL operators.operatorframework.io.bundle.channels.v1="fast,4.11,4.10,4.9" disagrees with metadata/annotations.yaml ("stable,4.11,4.10,4.9")`, lint.Error}},
		},
		{
			name: "dockerfile without a label",
			break_: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "bundle.Dockerfile"), "LABEL operators.operatorframework.io.bundle.package.v1=aws-efs-operator\n", "")
			},
			want: []wantProblem{{"bundle.Dockerfile", "LABEL operators.operatorframework.io.bundle.package.v1 is missing", lint.Error}},
		},
		{
			name: "related image on a moving tag and deployment image not mirrored",
			break_: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, csvFile), "image: quay.io/openshift/origin-kube-rbac-proxy:4.11", "image: quay.io/openshift/origin-kube-rbac-proxy:latest")
			},
			want: []wantProblem{
				{csvFile, `image "quay.io/openshift/origin-kube-rbac-proxy:latest" names the moving tag latest`, lint.Error},
				{csvFile, "env KUBE_RBAC_PROXY_IMAGE image", lint.Error},
			},
		},
		{
			name: "wildcard permission",
			break_: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, csvFile), "- clustercsidrivers/finalizers", `- "*"`)
			},
			want: []wantProblem{{csvFile, "wildcard in resources", lint.Error}},
		},
		{
			name: "malformed manifest",
			break_: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, "manifests", "extra.yaml"), []byte("kind: [unclosed"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantProblem{
				{"manifests/extra.yaml", "not a valid manifest", lint.Error},
				{".", "cannot load the bundle", lint.Error},
			},
		},
		{
			name: "owned CRD missing from the bundle",
			break_: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "manifests", "aws-efs.managed.openshift.io_sharedvolumes.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantProblem{{csvFile, `owned CRD "aws-efs.managed.openshift.io/v1alpha1, Kind=SharedVolume" not found`, lint.Error}},
		},
		{
			name: "unknown category and capability",
			break_: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, csvFile), "categories: Storage", "categories: Filing Cabinets")
				editFile(t, filepath.Join(dir, csvFile), "capabilities: Full Lifecycle", "capabilities: Mostly Works")
			},
			want: []wantProblem{
				{csvFile, `"Filing Cabinets" is not in the set of standard categories`, lint.Error},
				{csvFile, `"Mostly Works" is not a valid capabilities level`, lint.Error},
			},
		},
		{
			name: "missing annotations file",
			break_: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "metadata", "annotations.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantProblem{{"metadata/annotations.yaml", "missing: without it OLM knows neither the bundle's package nor its channels", lint.Error}},
		},
	}
	explain := lint.ExplainerFor(drivers.All())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyBundle(t, efsHead)
			tt.break_(t, dir)
			problems := lint.Bundle(dir, lint.Options{Explain: explain})
			for _, w := range tt.want {
				wantFile := filepath.Join(dir, w.file)
				found := false
				for _, p := range problems {
					if filepath.Clean(p.File) == filepath.Clean(wantFile) && p.Level == w.level && strings.Contains(p.Message, w.contains) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s in %s containing %q; got:\n%s", w.level, w.file, w.contains, list(problems))
				}
			}
		})
	}
}

func list(problems []lint.Problem) string {
	var sb strings.Builder
	for _, p := range problems {
		sb.WriteString("  " + p.String() + "\n")
	}
	return sb.String()
}

func TestDockerfileLabels(t *testing.T) {
	labels, err := lint.DockerfileLabels(strings.NewReader("FROM scratch\nLABEL a=b\nLABEL c=\"d e\"\nCOPY x /x/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) != 2 || labels["a"] != "b" || labels["c"] != "d e" {
		t.Errorf("labels = %v", labels)
	}
	if _, err := lint.DockerfileLabels(strings.NewReader("LABEL a=b c=d\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("two labels on one line: err = %v, want one naming line 1", err)
	}
}
