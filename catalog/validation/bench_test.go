package validation_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"golang.org/x/sys/unix"

	"github.com/csi-olm/csi-olm/test/synthcatalog"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// syntheticCatalog writes packages×versions bundles: each channel is a replaces chain in which
// every fourth entry skips the release before it and replaces the one before that, and every
// tenth carries a skipRange over all older versions. Bundles carry what published catalogs do: an image, the package and GVK properties
// and the CSV metadata OperatorHub shows. With objectBytes above zero they take the offline form
// instead: no image, and a CSV and a CRD of about objectBytes in all embedded as
// olm.bundle.object properties, as `opm render` of a bundle directory writes them.
func syntheticCatalog(tb testing.TB, dir string, packages, versions, objectBytes int) {
	tb.Helper()
	description := strings.Repeat("A synthetic operator used to measure catalog validation. ", 20)
	var cfg declcfg.DeclarativeConfig
	for p := 0; p < packages; p++ {
		pkg := fmt.Sprintf("synthetic-%02d", p)
		cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: "stable"})
		ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: pkg, Name: "stable"}
		for v := 0; v < versions; v++ {
			name := fmt.Sprintf("%s.v1.%d.0", pkg, v)
			entry := declcfg.ChannelEntry{Name: name}
			if v > 0 {
				entry.Replaces = fmt.Sprintf("%s.v1.%d.0", pkg, v-1)
			}
			if v >= 2 && v%4 == 0 {
				// Skip a bad release, as OLM's docs show: replace the one before it.
				entry.Replaces = fmt.Sprintf("%s.v1.%d.0", pkg, v-2)
				entry.Skips = []string{fmt.Sprintf("%s.v1.%d.0", pkg, v-1)}
			}
			if v > 0 && v%10 == 0 {
				entry.SkipRange = fmt.Sprintf(">=1.0.0 <1.%d.0", v)
			}
			ch.Entries = append(ch.Entries, entry)
			csvMeta, err := json.Marshal(map[string]any{"displayName": pkg, "description": description, "provider": map[string]string{"name": "csi-olm"}})
			if err != nil {
				tb.Fatal(err)
			}
			bundle := declcfg.Bundle{
				Schema: declcfg.SchemaBundle, Package: pkg, Name: name,
				Image: fmt.Sprintf("quay.io/synthetic/%s-bundle:v1.%d.0", pkg, v),
				Properties: []property.Property{
					property.MustBuildPackage(pkg, fmt.Sprintf("1.%d.0", v)),
					property.MustBuildGVK("synthetic.example.com", "v1", fmt.Sprintf("Kind%02d", p)),
					{Type: property.TypeCSVMetadata, Value: csvMeta},
				},
			}
			if objectBytes > 0 {
				bundle.Image = ""
				for _, obj := range embeddedObjects(tb, pkg, name, p, objectBytes) {
					bundle.Properties = append(bundle.Properties, property.MustBuildBundleObject(obj))
				}
			}
			cfg.Bundles = append(cfg.Bundles, bundle)
		}
		cfg.Channels = append(cfg.Channels, ch)
	}
	if err := declcfg.WriteFS(cfg, dir, declcfg.WriteJSON, ".json"); err != nil {
		tb.Fatal(err)
	}
}

// embeddedObjects returns a bundle's CSV and CRD as JSON, about size bytes in all: the CSV's
// description takes what the rest leaves, as long descriptions do in real bundles.
func embeddedObjects(tb testing.TB, pkg, name string, p, size int) [][]byte {
	tb.Helper()
	kind := fmt.Sprintf("Kind%02d", p)
	crd, err := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": strings.ToLower(kind) + "s.synthetic.example.com"},
		"spec": map[string]any{
			"group": "synthetic.example.com", "scope": "Cluster",
			"names": map[string]any{"kind": kind, "plural": strings.ToLower(kind) + "s"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	csv := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
		"metadata": map[string]any{"name": name, "annotations": map[string]string{"capabilities": "Basic Install"}},
		"spec": map[string]any{
			"displayName": pkg, "version": strings.TrimPrefix(name, pkg+".v"),
			"customresourcedefinitions": map[string]any{"owned": []any{map[string]any{"name": strings.ToLower(kind) + "s.synthetic.example.com", "version": "v1", "kind": kind}}},
			"install":                   map[string]any{"strategy": "deployment"},
		},
	}
	head, err := json.Marshal(csv)
	if err != nil {
		tb.Fatal(err)
	}
	csv["spec"].(map[string]any)["description"] = strings.Repeat("x", max(0, size-len(crd)-len(head)))
	full, err := json.Marshal(csv)
	if err != nil {
		tb.Fatal(err)
	}
	return [][]byte{full, crd}
}

// measure runs a command through peakrss (testdata/peakrss: why) and returns its wall time and
// peak RSS.
func measure(tb testing.TB, peakrss, name string, args ...string) (time.Duration, int64) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(peakrss, append([]string{name}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s %v: %v\n%s", name, args, err, stderr.String())
	}
	var ns, rss int64
	if _, err := fmt.Sscan(stdout.String(), &ns, &rss); err != nil {
		tb.Fatalf("peakrss printed %q: %v", stdout.String(), err)
	}
	return time.Duration(ns), rss
}

// dropCached drops a file's pages from the page cache.
func dropCached(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		tb.Fatalf("dropping %s from the page cache: %v", path, err)
	}
}

// BenchmarkValidateVsOpm times `csi-olm catalog validate` (opm's rules plus the graph checks)
// against `opm validate` on the same catalog, alternating the two in each iteration, and reports
// the medians and their ratios. The catalog takes three forms: a synthetic catalog of 2,000
// bundles (50 packages × 40 versions) in the metadata form published catalogs have, the same in
// the offline form of the project's catalogs, with about 20 KiB of manifests embedded in each
// bundle (base64 in the catalog's JSON, about 55 MB in all; catalog-MB reports it), and the field
// catalog of test/synthcatalog, shaped as OperatorHub's are.
func BenchmarkValidateVsOpm(b *testing.B) {
	opm := testutil.Opm(b)
	bin := filepath.Join(b.TempDir(), "csi-olm")
	peakrss := filepath.Join(filepath.Dir(bin), "peakrss")
	for _, build := range []*exec.Cmd{
		exec.Command("go", "build", "-o", bin, "github.com/csi-olm/csi-olm/cmd/csi-olm"),
		exec.Command("go", "build", "-o", peakrss, "./testdata/peakrss"),
	} {
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", build.Args, err, out)
		}
	}
	// A binary the linker has just written sits in the page cache in large folios, which the
	// kernel maps whole: csi-olm would start 30 MB bigger than an opm read back from disk. Both
	// are dropped from the cache, so that both are read as a user's binaries are.
	for _, path := range []string{bin, opm} {
		dropCached(b, path)
	}
	for _, form := range []struct {
		name  string
		write func(tb testing.TB, dir string)
	}{
		{"metadata", func(tb testing.TB, dir string) { syntheticCatalog(tb, dir, 50, 40, 0) }},
		{"offline", func(tb testing.TB, dir string) { syntheticCatalog(tb, dir, 50, 40, 20<<10) }},
		// The field's shape: 40 packages, 805 bundles, dependencies, pre-releases, deprecations.
		{"field", func(tb testing.TB, dir string) {
			if err := synthcatalog.WriteFieldCatalogs(dir, filepath.Join(tb.TempDir(), "deps")); err != nil {
				tb.Fatal(err)
			}
		}},
	} {
		b.Run(form.name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "synthetic")
			form.write(b, dir)
			var size int64
			err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				info, err := d.Info()
				size += info.Size()
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			var ours, theirs []float64
			var oursRSS, theirsRSS []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t, rss := measure(b, peakrss, bin, "catalog", "validate", dir)
				ours, oursRSS = append(ours, t.Seconds()), append(oursRSS, float64(rss)/(1<<20))
				t, rss = measure(b, peakrss, opm, "validate", dir)
				theirs, theirsRSS = append(theirs, t.Seconds()), append(theirsRSS, float64(rss)/(1<<20))
			}
			b.ReportMetric(testutil.Median(ours), "csi-olm-s")
			b.ReportMetric(testutil.Median(theirs), "opm-s")
			b.ReportMetric(testutil.Median(ours)/testutil.Median(theirs), "time-ratio")
			b.ReportMetric(testutil.Median(oursRSS), "csi-olm-maxrss-MiB")
			b.ReportMetric(testutil.Median(theirsRSS), "opm-maxrss-MiB")
			b.ReportMetric(testutil.Median(oursRSS)/testutil.Median(theirsRSS), "rss-ratio")
			b.ReportMetric(float64(size)/1e6, "catalog-MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}
