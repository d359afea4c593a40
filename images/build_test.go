package images_test

import (
	"archive/tar"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/test/testutil"
)

// files lists the regular files of an image with their content.
func files(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	r := mutate.Extract(img)
	defer r.Close()
	tr := tar.NewReader(r)
	got := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		if !hdr.ModTime.Equal(images.Epoch) || hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("%s: dated %s, owned by %d:%d; want the epoch and root", hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got["/"+hdr.Name] = string(data)
	}
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestBundleImagesCarryTheirAnnotationsAsLabels builds the image of every committed bundle and
// checks that its labels are exactly metadata/annotations.yaml, which is how OLM reads a bundle
// image, and that it holds exactly the bundle's files.
func TestBundleImagesCarryTheirAnnotationsAsLabels(t *testing.T) {
	dirs, err := filepath.Glob("../bundle/*/*/metadata/annotations.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no committed bundle found: %v", err)
	}
	for _, annotations := range dirs {
		dir := filepath.Dir(filepath.Dir(annotations))
		img, err := images.Bundle(os.DirFS(dir))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(annotations)
		if err != nil {
			t.Fatal(err)
		}
		var file struct{ Annotations map[string]string }
		if err := yaml.Unmarshal(raw, &file); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(cfg.Config.Labels, file.Annotations) {
			t.Errorf("%s: labels %v, annotations %v", dir, cfg.Config.Labels, file.Annotations)
		}
		want := testutil.Snapshot(t, dir)
		got := files(t, img)
		for p, content := range want {
			if !strings.HasPrefix(p, "manifests/") && !strings.HasPrefix(p, "metadata/") {
				continue
			}
			if got["/"+p] != content {
				t.Errorf("%s: the image's /%s differs from the bundle's", dir, p)
			}
			delete(got, "/"+p)
		}
		if len(got) > 0 {
			t.Errorf("%s: the image holds files the bundle's manifests/ and metadata/ do not: %v", dir, slices.Sorted(maps.Keys(got)))
		}
	}
}

func TestImagesAreReproducible(t *testing.T) {
	a := []images.File{{Path: "/b/c", Mode: 0o644, Data: []byte("c")}, {Path: "/a", Mode: 0o755, Data: []byte("a")}}
	b := []images.File{a[1], a[0]}
	imgs := make([]v1.Image, 2)
	for i, fs := range [][]images.File{a, b} {
		layer, err := images.Layer(fs)
		if err != nil {
			t.Fatal(err)
		}
		if imgs[i], err = images.Image(nil, images.Config{Entrypoint: []string{"/a"}, Platform: v1.Platform{OS: "linux", Architecture: "amd64"}}, layer); err != nil {
			t.Fatal(err)
		}
	}
	if digest(t, imgs[0]) != digest(t, imgs[1]) {
		t.Errorf("the same files in another order make another image")
	}
	if got := files(t, imgs[0]); got["/a"] != "a" || got["/b/c"] != "c" || len(got) != 2 {
		t.Errorf("files = %v", got)
	}
	for _, bad := range [][]images.File{
		{{Path: "/a", Data: nil}, {Path: "a", Data: nil}},
		{{Path: "/a", Data: nil}, {Path: "/a/b", Data: nil}},
	} {
		if _, err := images.Layer(bad); err == nil {
			t.Errorf("Layer(%v) accepted a clash", bad)
		}
	}
}

// TestOperatorImageHasAWritableTmp: the operator writes its metrics server's self-signed
// certificate to /tmp at start, and exited in the first pod a real node ran without it.
func TestOperatorImageHasAWritableTmp(t *testing.T) {
	binary, err := os.ReadFile(testutil.BuildStatic(t, "github.com/csi-olm/csi-olm/test/e2e/netprobe", "amd64"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Operator(binary, nil, "1", "r")
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, img); got[images.OperatorBinary] != string(binary) || len(got) != 1 {
		t.Errorf("the operator image holds %v, want only %s", slices.Sorted(maps.Keys(got)), images.OperatorBinary)
	}
	if mode := dirMode(t, img, "tmp"); mode != 0o1777 {
		t.Errorf("/tmp has mode %o, want 1777", mode)
	}
}

// dirMode returns the tar mode of a directory entry of an image (by its cleaned path, as the
// flattened image names it), -1 when there is none.
func dirMode(t *testing.T, img v1.Image, name string) int64 {
	t.Helper()
	r := mutate.Extract(img)
	defer r.Close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return -1
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeDir && hdr.Name == name {
			return hdr.Mode
		}
	}
}

// TestCatalogImageServesItsConfigs builds a catalog image of the committed certified catalog
// with the tools' opm and checks what OLM relies on: the configs label, opm serve as entrypoint,
// the catalog under /configs.
func TestCatalogImageServesItsConfigs(t *testing.T) {
	binary, err := os.ReadFile(testutil.Opm(t))
	if err != nil {
		t.Fatal(err)
	}
	probe, err := os.ReadFile(testutil.GRPCHealthProbe(t))
	if err != nil {
		t.Fatal(err)
	}
	opm, err := images.NewOPM(binary, probe)
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Catalog(os.DirFS("../catalog/certified/v4.11"), opm)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.Labels[images.ConfigsLabel] != "/configs" || !slices.Equal(c.Entrypoint, []string{"/bin/opm"}) || !slices.Equal(c.Cmd, []string{"serve", "/configs"}) || c.User == "" || c.User == "0" {
		t.Errorf("config = %+v", c)
	}
	got := files(t, img)
	if got["/bin/opm"] != string(binary) {
		t.Errorf("the image's /bin/opm is not the opm it was built with")
	}
	// OLM's registry pod probes with grpc_health_probe from the PATH, and opm serve writes its
	// cache to /tmp as a non-root user.
	if got["/bin/grpc_health_probe"] != string(probe) {
		t.Errorf("the image's /bin/grpc_health_probe is not the probe it was built with")
	}
	if mode := dirMode(t, img, "tmp"); mode != 0o1777 {
		t.Errorf("/tmp has mode %o, want 1777", mode)
	}
	want, err := os.ReadFile("../catalog/certified/v4.11/aws-efs-operator/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	if got["/configs/aws-efs-operator/catalog.json"] != string(want) {
		t.Errorf("/configs/aws-efs-operator/catalog.json differs from the catalog's")
	}
	if _, err := images.Catalog(os.DirFS(t.TempDir()), opm); err == nil || !strings.Contains(err.Error(), "the catalog has no files") {
		t.Errorf("an empty catalog: %v", err)
	}
}

func TestOnlyStaticLinuxBinariesGoOnAnEmptyBase(t *testing.T) {
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, want string
		binary     []byte
	}{
		{"dynamically linked", "is dynamically linked, so it cannot run on an empty base image: build it with CGO_ENABLED=0", sh},
		{"not an executable", "is not a Linux executable", []byte("#!/bin/sh\n")},
	} {
		if _, err := images.Operator(tt.binary, nil, "1", "r"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("operator %s: %v, want %q", tt.name, err, tt.want)
		}
		if _, err := images.NewOPM(tt.binary, tt.binary); err == nil || !strings.Contains(err.Error(), "opm "+tt.want) {
			t.Errorf("opm %s: %v, want %q", tt.name, err, tt.want)
		}
		if _, err := images.UtilImage(tt.binary, tt.binary); err == nil || !strings.Contains(err.Error(), "util image: cp "+tt.want) {
			t.Errorf("util image %s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestUnpackImagesHoldWhatOLMsJobsRun: OLM's bundle-unpack Job runs /bin/cp and /bin/cpb from
// the util image, and opm (found on PATH) from the opm image.
func TestUnpackImagesHoldWhatOLMsJobsRun(t *testing.T) {
	static := testutil.BuildStatic(t, "github.com/csi-olm/csi-olm/test/e2e/netprobe", "amd64")
	bin, err := os.ReadFile(static)
	if err != nil {
		t.Fatal(err)
	}
	util, err := images.UtilImage(bin, bin)
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, util); got["/bin/cp"] == "" || got["/bin/cpb"] == "" {
		t.Errorf("the util image holds %v, want bin/cp and bin/cpb", slices.Sorted(maps.Keys(got)))
	}
	packed, err := images.NewOPM(bin, bin)
	if err != nil {
		t.Fatal(err)
	}
	opm, err := images.OPMImage(packed)
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, opm); got[images.OPMBinary] == "" {
		t.Errorf("the opm image holds %v, want %s", slices.Sorted(maps.Keys(got)), images.OPMBinary)
	}
}
