package efsutilsbase

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBuildImage builds the image with hack/build-efs-utils-base.sh and looks inside it. It needs
// podman or buildah, the base images' registry and github.com; without one of them it skips and
// says which, since nothing here can stand in for a real build.
func TestBuildImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building the image pulls UBI images and downloads efs-utils")
	}
	tool := ""
	for _, name := range []string{"podman", "buildah"} {
		if _, err := exec.LookPath(name); err == nil {
			tool = name
			break
		}
	}
	if tool == "" {
		t.Skip("no podman or buildah on PATH: `make test` installs buildah (`make image-builder`); without one the image cannot be built")
	}

	// The build script lets the environment override the defaults: probe what it will use.
	defaults := loadDefaults(t)
	value := func(key string) string {
		if v := os.Getenv(key); v != "" {
			return v
		}
		return defaults[key].value
	}
	for _, key := range []string{"BASE_IMAGE", "BUILDER_IMAGE"} {
		if out, err := run(t, 10*time.Minute, tool, "pull", "--quiet", value(key)); err != nil {
			t.Skipf("%s cannot pull %s=%s, so the image cannot be built here: %v\n%s", tool, key, value(key), err, out)
		}
	}
	version := value("EFS_UTILS_VERSION")
	if err := probe(repoURL); err != nil {
		t.Skipf("the efs-utils repository is unreachable, so the image cannot be built here: %v", err)
	}

	image := fmt.Sprintf("%s:test-%d", baseImageRepo, os.Getpid())
	t.Setenv("IMAGE", image)
	if out, err := run(t, 30*time.Minute, "bash", buildScript); err != nil {
		t.Fatalf("%s: %v\n%s", buildScript, err, out)
	}
	t.Cleanup(func() {
		if out, err := run(t, time.Minute, tool, "rmi", "--force", image); err != nil {
			t.Logf("remove %s: %v\n%s", image, err, out)
		}
	})

	script := `set -e
for f in /sbin/mount.efs /usr/bin/amazon-efs-mount-watchdog; do test -x "$f" || { echo "$f is not executable"; exit 1; }; done
for f in /etc/amazon/efs/efs-utils.conf /etc/amazon/efs/efs-utils.crt; do test -s "$f" || { echo "$f is missing or empty"; exit 1; }; done
test -d ` + logDir + ` || { echo "no ` + logDir + `"; exit 1; }
for c in stunnel mount.nfs4 mount openssl python3 which; do command -v "$c" >/dev/null || { echo "no $c on PATH"; exit 1; }; done
/sbin/mount.efs --version`
	out, err := runIn(t, tool, image, script)
	if err != nil {
		t.Fatalf("inside %s: %v\n%s", image, err, out)
	}
	if want := "Version: " + version; !strings.Contains(out, want) {
		t.Errorf("/sbin/mount.efs --version in %s printed %q, want %q", image, strings.TrimSpace(out), want)
	}

	format := map[string]string{
		"podman":  `{{json .Config.Entrypoint}} {{index .Labels "org.opencontainers.image.version"}}`,
		"buildah": `{{json .OCIv1.Config.Entrypoint}} {{index .OCIv1.Config.Labels "org.opencontainers.image.version"}}`,
	}[tool]
	inspect := []string{"image", "inspect", "--format", format, image}
	if tool == "buildah" {
		inspect = []string{"inspect", "--type", "image", "--format", format, image}
	}
	out, err = run(t, time.Minute, tool, inspect...)
	if err != nil {
		t.Fatalf("inspect %s: %v\n%s", image, err, out)
	}
	entrypoint, label, _ := strings.Cut(strings.TrimSpace(out), " ")
	if entrypoint != "null" && entrypoint != "[]" {
		t.Errorf("%s has the entrypoint %s; the base image must have none", image, entrypoint)
	}
	if label != version {
		t.Errorf("%s is labelled org.opencontainers.image.version=%q, want %q", image, label, version)
	}
}

func run(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// runIn runs a shell script in a container of image.
func runIn(t *testing.T, tool, image, script string) (string, error) {
	t.Helper()
	if tool == "podman" {
		return run(t, 5*time.Minute, "podman", "run", "--rm", "--entrypoint", "/bin/sh", image, "-c", script)
	}
	ctr, err := run(t, time.Minute, "buildah", "from", "--quiet", image)
	if err != nil {
		return ctr, fmt.Errorf("buildah from: %w", err)
	}
	ctr = strings.TrimSpace(ctr)
	defer func() { _, _ = run(t, time.Minute, "buildah", "rm", ctr) }()
	return run(t, 5*time.Minute, "buildah", "run", ctr, "--", "/bin/sh", "-c", script)
}

// probe tells whether url answers; a missing release is not "unreachable" and fails the build.
func probe(url string) error {
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Head(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("HEAD %s: %s", url, resp.Status)
	}
	return nil
}
