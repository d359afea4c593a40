package lint_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/bundle/lint"
)

func run(t *testing.T, strict bool, explain lint.Explainer, paths ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	v := &lint.Validate{Paths: paths, Strict: strict, Explain: explain, Out: &out}
	err := v.Run(context.Background())
	return out.String(), err
}

func TestValidateCommittedBundles(t *testing.T) {
	out, err := run(t, true, lint.ExplainerFor(drivers.All()), "..")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "8 bundles: 0 errors, 0 warnings, 7 explained warnings") {
		t.Errorf("unexpected summary:\n%s", out)
	}
}

// Without the definitions' waivers the preview-channel warnings count, and --strict fails.
func TestStrictFailsOnUnexplainedWarnings(t *testing.T) {
	out, err := run(t, true, nil, "../aws-ebs-csi-driver-operator")
	if err == nil || !strings.Contains(err.Error(), "1 unexplained warnings") {
		t.Fatalf("err = %v\n%s", err, out)
	}
	if _, err := run(t, false, nil, "../aws-ebs-csi-driver-operator"); err != nil {
		t.Errorf("warnings failed without --strict: %v", err)
	}
}

func TestValidateReportsEveryBrokenBundle(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "metadata"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte("annotations: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, false, nil, root)
	if err == nil {
		t.Fatalf("broken bundles passed:\n%s", out)
	}
	for _, want := range []string{"FAIL " + filepath.Join(root, "a"), "FAIL " + filepath.Join(root, "b"), "2 bundles:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateNeedsBundles(t *testing.T) {
	for _, path := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
		if _, err := run(t, false, nil, path); err == nil {
			t.Errorf("%s: no error for a path without bundles", path)
		}
	}
}
