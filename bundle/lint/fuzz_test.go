package lint_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/csi-olm/csi-olm/bundle/lint"
	"github.com/csi-olm/csi-olm/bundle/registryv1"
)

// ebsBundle is the smallest committed bundle: the fuzz target's starting point.
const ebsBundle = "../aws-ebs-csi-driver-operator/4.5.0"

// FuzzBundle replaces a committed bundle's CSV, annotations and Dockerfile with arbitrary bytes
// and validates it, in release mode and not, with the OLM v1 checks: whatever the input, every
// problem names a file and says something, and nothing panics. `make fuzz` runs it briefly.
func FuzzBundle(f *testing.F) {
	csvs, err := filepath.Glob(filepath.Join(ebsBundle, registryv1.ManifestsDir, "*.clusterserviceversion.yaml"))
	if err != nil || len(csvs) != 1 {
		f.Fatalf("%s has %d CSVs (%v)", ebsBundle, len(csvs), err)
	}
	csvName := filepath.Base(csvs[0])
	read := func(p string) []byte {
		raw, err := os.ReadFile(filepath.Join(ebsBundle, p))
		if err != nil {
			f.Fatal(err)
		}
		return raw
	}
	csv, annotations, dockerfile := read(filepath.Join(registryv1.ManifestsDir, csvName)), read(registryv1.AnnotationsFile), read(registryv1.DockerfileFile)
	f.Add(csv, annotations, dockerfile, false)
	f.Add(csv[:len(csv)/2], annotations, dockerfile, true)
	f.Add([]byte("kind: ClusterServiceVersion\nspec: {install: {strategy: deployment}}\n"), []byte("annotations: []\n"), []byte("LABEL a\n"), false)

	// One tree per fuzzing process, rewritten for each input.
	dir := f.TempDir()
	if err := os.CopyFS(dir, os.DirFS(ebsBundle)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, csv, annotations, dockerfile []byte, release bool) {
		for p, content := range map[string][]byte{filepath.Join(registryv1.ManifestsDir, csvName): csv, registryv1.AnnotationsFile: annotations, registryv1.DockerfileFile: dockerfile} {
			if err := os.WriteFile(filepath.Join(dir, p), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range lint.Bundle(dir, lint.Options{Release: release, OLMv1: true}) {
			if p.File == "" || p.Message == "" {
				t.Errorf("a problem that names no file or says nothing: %+v", p)
			}
		}
	})
}
