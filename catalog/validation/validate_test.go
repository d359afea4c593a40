package validation_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/catalog/validation"
)

func run(v *validation.Validate) (string, error) {
	var out bytes.Buffer
	v.Out = &out
	err := v.Run(context.Background())
	return out.String(), err
}

func TestCommittedCatalogsValidate(t *testing.T) {
	for _, v := range []*validation.Validate{
		{Dir: "../community", Bundles: "../../bundle"},
		{Dir: "../certified", Community: "../community", Bundles: "../../bundle"},
	} {
		out, err := run(v)
		if err != nil || !strings.Contains(out, "0 errors, 0 warnings") {
			t.Errorf("%s: %v\n%s", v.Dir, err, out)
		}
	}
	// Alone, the certified catalog cannot check the edge from the community head.
	out, err := run(&validation.Validate{Dir: "../certified"})
	if err != nil || !strings.Contains(out, `upgrades from "aws-efs-operator.v0.0.8", which is not in this catalog (validate it together with the community catalog`) {
		t.Errorf("certified alone: %v\n%s", err, out)
	}
}

// Every problem is printed with its file, and errors make the verb fail.
func TestValidateReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a/catalog.yaml": "schema: olm.package\nname: a\ndefaultChannel: stable\n",
		"b/catalog.yaml": "schema: olm.package\nname: b\n  defaultChannel: [x\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(&validation.Validate{Dir: dir})
	if err == nil {
		t.Fatalf("a broken catalog validated:\n%s", out)
	}
	for _, want := range []string{dir + "/a/catalog.yaml: error: [opm] package a", dir + "/a/catalog.yaml: error: [graph] package a: default channel \"stable\" does not exist", dir + "/b/catalog.yaml: error: [load] not valid YAML or JSON", "errors"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateRejectsBadPaths(t *testing.T) {
	for _, v := range []*validation.Validate{
		{Dir: "../nowhere"},
		{Dir: "validation.go"},
		{Dir: "../certified", Community: "../nowhere"},
		{Dir: "../certified", Bundles: "../nowhere"},
	} {
		if _, err := run(v); err == nil {
			t.Errorf("%+v: no error", v)
		}
	}
}
