package badinput_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/catalog/diff"
	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

// TestCatalogCorpusThroughSimulateAndDiff feeds every catalog case, and the field catalog (valid,
// with the field's old mistakes and dependencies on a catalog not given), to `catalog simulate
// --all` and to `catalog diff` from the shipped certified catalog of the newest minor. They read a catalog as OLM's
// registry does, so a catalog that only breaks `catalog validate`'s graph rules may pass; what
// every case must do is not panic, leave its input as it was, and, when refused, be refused with
// the input's path in the message. Starts OLM cannot resolve are a verdict, not a refusal.
func TestCatalogCorpusThroughSimulateAndDiff(t *testing.T) {
	shipped := filepath.Join(repoRoot, "catalog", "certified", "v4.11")
	refused := 0
	inputs := map[string]func(t *testing.T) string{
		"field": func(t *testing.T) string {
			dir := filepath.Join(t.TempDir(), "field")
			if err := synthcatalog.WriteFieldCatalogs(dir, filepath.Join(t.TempDir(), "deps")); err != nil {
				t.Fatal(err)
			}
			return dir
		},
	}
	for _, name := range caseDirs(t, "catalog") {
		inputs[name] = func(t *testing.T) string {
			dir := filepath.Join("catalog", name)
			raw, err := os.ReadFile(filepath.Join(dir, "case.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var c caseFile
			if err := yaml.UnmarshalStrict(raw, &c); err != nil {
				t.Fatal(err)
			}
			return buildTree(t, dir, &c)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		t.Run(name, func(t *testing.T) {
			input := inputs[name](t)
			before := snapshot(t, input)
			for verb, run := range map[string]func(context.Context, *bytes.Buffer) error{
				"simulate --all": func(ctx context.Context, out *bytes.Buffer) error {
					return (&simulate.Simulate{Catalog: input, All: true, Output: "text", Out: out}).Run(ctx)
				},
				"diff": func(ctx context.Context, out *bytes.Buffer) error {
					return (&diff.Diff{Old: shipped, New: input, Output: "text", Out: out}).Run(ctx)
				},
			} {
				var out bytes.Buffer
				err := func() (err error) {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("%s panicked on %s: %v\n%s", verb, name, r, debug.Stack())
						}
					}()
					return run(context.Background(), &out)
				}()
				var verdict *simulate.UnresolvableError
				if errors.As(err, &verdict) && strings.Contains(out.String(), "ResolutionFailed") {
					err = nil
				}
				if err != nil {
					refused++
					if !strings.Contains(err.Error(), input) {
						t.Errorf("%s refused %s without naming the input %s: %v", verb, name, input, err)
					}
				}
			}
			if after := snapshot(t, input); !maps.Equal(before, after) {
				t.Errorf("%s: a verb changed its input", name)
			}
		})
	}
	t.Logf("%d refusals", refused)
}
