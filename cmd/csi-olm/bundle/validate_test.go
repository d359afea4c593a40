package bundle_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/bundle"
)

const efsHead = "../../../bundle/aws-efs-operator/4.11.0"

func validate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	logrus.SetLevel(logrus.WarnLevel) // as csi-olm's root command does
	cmd := bundle.NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append([]string{"validate"}, args...))
	err := cmd.Execute()
	return out.String(), err
}

// --olm v1 passes the committed head, and fails a copy of it that supports OwnNamespace instead
// of AllNamespaces, which passes without the flag.
func TestValidateOLMv1(t *testing.T) {
	if out, err := validate(t, "--olm", "v1", "--strict", efsHead); err != nil || !strings.Contains(out, "ok "+efsHead) {
		t.Fatalf("--olm v1 on the committed head: %v\n%s", err, out)
	}

	dir := filepath.Join(t.TempDir(), "4.11.0")
	if err := os.CopyFS(dir, os.DirFS(efsHead)); err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(dir, "manifests", "aws-efs-csi-driver-operator.v4.11.0.clusterserviceversion.yaml")
	raw, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	modes := strings.NewReplacer(
		"  - supported: false\n    type: OwnNamespace", "  - supported: true\n    type: OwnNamespace",
		"  - supported: true\n    type: AllNamespaces", "  - supported: false\n    type: AllNamespaces",
	).Replace(string(raw))
	if modes == string(raw) {
		t.Fatalf("%s: the install modes are not where the test expects them", csv)
	}
	if err := os.WriteFile(csv, []byte(modes), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := validate(t, "--olm", "v1", dir)
	if err == nil {
		t.Fatalf("--olm v1 passed an OwnNamespace-only bundle:\n%s", out)
	}
	if want := csv + ": error: [olmv1/all-namespaces] aws-efs-csi-driver-operator.v4.11.0: spec.installModes supports OwnNamespace but not AllNamespaces"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if out, err := validate(t, dir); err != nil {
		t.Errorf("without --olm v1 the bundle fails: %v\n%s", err, out)
	}
}
