package efsutilsbase

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/operator/assets"
)

// The AWS EFS CSI driver's efs-utils flags and their defaults (kubernetes-sigs/aws-efs-csi-driver,
// cmd/main.go). At start-up the driver:
//   - makes etcAmazonEfs a symlink to the legacy directory when it holds an efs-utils.conf, else
//     to the config directory (pkg/driver/config_dir.go, InitConfigDir), unless etcAmazonEfs
//     already exists, in which case it is used as it is;
//   - copies the static files from the static files directory into it without overwriting,
//     except efs-utils.crt, and rewrites efs-utils.conf (pkg/driver/efs_watch_dog.go);
//   - runs amazon-efs-mount-watchdog, which with mount.efs keeps its state in efsStateDir.
const (
	configDirFlag       = "efs-utils-config-dir-path"
	legacyConfigDirFlag = "efs-utils-config-legacy-dir-path"
	staticFilesFlag     = "efs-utils-static-files-path"

	etcAmazonEfs     = "/etc/amazon/efs" // efs-utils' CONFIG_FILE directory and the driver's symlink
	legacyHostConfig = "/etc/amazon/efs" // the host directory earlier drivers wrote the config to
	efsStateDir      = "/var/run/efs"    // efs-utils' STATE_FILE_DIR, also the driver's efsStateDir
	driverContainer  = "efs-plugin"
	baseImageRepo    = "localhost/csi-olm/efs-utils-base"
)

var driverFlagDefaults = map[string]string{
	configDirFlag:       "/var/amazon/efs",
	legacyConfigDirFlag: "/etc/amazon/efs-legacy",
	staticFilesFlag:     "/etc/amazon/efs-static-files/",
}

func TestDriverImageBuildsFromTheBaseImage(t *testing.T) {
	defaults := loadDefaults(t)
	c := parseContainerfile(t, driverContainerfile)
	final := c.final()
	tag := baseImageRepo + ":" + defaults["EFS_UTILS_VERSION"].value
	tests := []struct {
		name  string
		check func() error
	}{
		{"FROM the base image", func() error {
			if !slices.Equal(final.from.args, []string{"${EFS_UTILS_BASE_IMAGE}"}) {
				return fmt.Errorf("%s: FROM %s; want FROM ${EFS_UTILS_BASE_IMAGE}", final.from.pos(), strings.Join(final.from.args, " "))
			}
			return nil
		}},
		{"the base image defaults to the tag the build script gives the pinned version", func() error {
			arg := c.globalArg(t, "EFS_UTILS_BASE_IMAGE")
			if arg.value != tag {
				return fmt.Errorf("%s: EFS_UTILS_BASE_IMAGE defaults to %q, want %q (%s:%d)", arg.in.pos(), arg.value, tag, defaultsFile, defaults["EFS_UTILS_VERSION"].line)
			}
			script, err := os.ReadFile(buildScript)
			if err != nil {
				return fmt.Errorf("read the build script: %w", err)
			}
			if want := baseImageRepo + ":${EFS_UTILS_VERSION}"; !strings.Contains(string(script), want) {
				return fmt.Errorf("%s: does not tag the image %s", buildScript, want)
			}
			return nil
		}},
		{"the driver is the entrypoint", func() error {
			for _, in := range final.instrs {
				if in.cmd == "entrypoint" && slices.Equal(in.args, []string{"/bin/aws-efs-csi-driver"}) {
					return nil
				}
			}
			return fmt.Errorf("%s:%d: no ENTRYPOINT [\"/bin/aws-efs-csi-driver\"]", driverContainerfile, final.from.line)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// nodeDriverContainer returns the efs-plugin container of the node DaemonSet the operator
// deploys, and the DaemonSet's volumes.
func nodeDriverContainer(t *testing.T) (corev1.Container, map[string]corev1.Volume) {
	t.Helper()
	manifest, err := assets.For("efs-utils-base-test")(assets.NodeFile)
	if err != nil {
		t.Fatalf("read the node DaemonSet asset: %v", err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.UnmarshalStrict(manifest, &ds); err != nil {
		t.Fatalf("operator/assets/%s: %v", assets.NodeFile, err)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		volumes[v.Name] = v
	}
	for _, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == driverContainer {
			return c, volumes
		}
	}
	t.Fatalf("operator/assets/%s: no container %s", assets.NodeFile, driverContainer)
	return corev1.Container{}, nil
}

// driverFlags returns the driver's efs-utils flags as the container sets them, defaults included.
func driverFlags(c corev1.Container) map[string]string {
	flags := map[string]string{}
	for name, value := range driverFlagDefaults {
		flags[name] = value
	}
	for _, arg := range slices.Concat(c.Command, c.Args) {
		name, value, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
		if _, known := driverFlagDefaults[name]; ok && known {
			flags[name] = value
		}
	}
	return flags
}

// hostPathMountedAt returns the host directory mounted at dir.
func hostPathMountedAt(c corev1.Container, volumes map[string]corev1.Volume, dir string) (string, error) {
	for _, m := range c.VolumeMounts {
		if path.Clean(m.MountPath) != path.Clean(dir) {
			continue
		}
		v, ok := volumes[m.Name]
		if !ok || v.HostPath == nil {
			return "", fmt.Errorf("the volume %s mounted there is not a hostPath", m.Name)
		}
		return path.Clean(v.HostPath.Path), nil
	}
	return "", fmt.Errorf("nothing is mounted there")
}

// mountsOver returns the mounts at dir or beneath it.
func mountsOver(c corev1.Container, dir string) []string {
	var out []string
	dir = path.Clean(dir)
	for _, m := range c.VolumeMounts {
		p := path.Clean(m.MountPath)
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, m.Name+" at "+m.MountPath)
		}
	}
	return out
}

var stateDirGuard = regexp.MustCompile(`^\^STATE_FILE_DIR = \["'\](/[^\[]+)\["'\]\$$`)

// nodeCheck is one thing the node DaemonSet's driver container must do for the images to work.
type nodeCheck struct {
	name  string
	check func(c corev1.Container, volumes map[string]corev1.Volume) error
}

func nodeChecks(t *testing.T) []nodeCheck {
	t.Helper()
	where := fmt.Sprintf("operator/assets/%s, container %s", assets.NodeFile, driverContainer)
	base := parseContainerfile(t, baseContainerfile)
	fetch := base.stage(t, fetchStage)
	fetchCmds := fetch.commands(t)
	driver := parseContainerfile(t, driverContainerfile)
	driverCmds := driver.final().commands(t)
	baseCopies := map[string]bool{}
	for _, in := range base.final().instrs {
		if in.cmd == "copy" && len(in.args) == 2 {
			baseCopies[in.args[1]] = true
		}
	}
	return []nodeCheck{
		{"the config dir the driver symlinks to is a host directory", func(c corev1.Container, volumes map[string]corev1.Volume) error {
			dir := driverFlags(c)[configDirFlag]
			if _, err := hostPathMountedAt(c, volumes, dir); err != nil {
				return fmt.Errorf("%s: --%s=%s: %v; efs-utils' private key and config would not survive a restart", where, configDirFlag, dir, err)
			}
			return nil
		}},
		{"the legacy config dir is the host's " + legacyHostConfig, func(c corev1.Container, volumes map[string]corev1.Volume) error {
			dir := driverFlags(c)[legacyConfigDirFlag]
			host, err := hostPathMountedAt(c, volumes, dir)
			if err != nil {
				return fmt.Errorf("%s: --%s=%s: %v; want the hostPath %s that earlier drivers wrote the config to", where, legacyConfigDirFlag, dir, err, legacyHostConfig)
			}
			if host != legacyHostConfig {
				return fmt.Errorf("%s: --%s=%s is the host's %s, want %s, where earlier drivers wrote the config", where, legacyConfigDirFlag, dir, host, legacyHostConfig)
			}
			return nil
		}},
		{"nothing is mounted over " + etcAmazonEfs + ", where the driver puts its symlink", func(c corev1.Container, _ map[string]corev1.Volume) error {
			if over := mountsOver(c, etcAmazonEfs); over != nil {
				return fmt.Errorf("%s: %s mounted over %s, which the driver must be able to replace with a symlink", where, strings.Join(over, ", "), etcAmazonEfs)
			}
			return nil
		}},
		{"the static files are where the driver copies them from", func(c corev1.Container, _ map[string]corev1.Volume) error {
			flag := driverFlags(c)[staticFilesFlag]
			static := path.Clean(flag)
			for _, f := range []string{"efs-utils.conf", "efs-utils.crt"} {
				if !baseCopies[path.Join(etcAmazonEfs, f)] {
					return fmt.Errorf("%s: the base image does not install %s", base.final().from.pos(), path.Join(etcAmazonEfs, f))
				}
			}
			// Moving the directory both puts the files at the static path and leaves etcAmazonEfs
			// to the driver's symlink.
			if !slices.ContainsFunc(driverCmds, func(cmd command) bool {
				return slices.Equal(cmd.program("mv"), []string{"mv", etcAmazonEfs, static})
			}) {
				return fmt.Errorf("%s: the driver image does not `mv %s %s` (--%s=%s in %s)", driver.final().from.pos(), etcAmazonEfs, static, staticFilesFlag, flag, where)
			}
			if over := mountsOver(c, static); over != nil {
				return fmt.Errorf("%s: %s hides the image's static files at %s", where, strings.Join(over, ", "), static)
			}
			return nil
		}},
		{"efs-utils' state dir is a host directory", func(c corev1.Container, volumes map[string]corev1.Volume) error {
			host, err := hostPathMountedAt(c, volumes, efsStateDir)
			if err != nil {
				return fmt.Errorf("%s: %s: %v; want the hostPath %s so that TLS mounts survive a driver restart", where, efsStateDir, err, efsStateDir)
			}
			if host != efsStateDir {
				return fmt.Errorf("%s: %s is the host's %s, want %s, where the stunnel state of mounts made before a restart is", where, efsStateDir, host, efsStateDir)
			}
			guarded := map[string]bool{}
			for _, cmd := range fetchCmds {
				argv := cmd.program("grep")
				if len(argv) != 4 {
					continue
				}
				if m := stateDirGuard.FindStringSubmatch(argv[2]); m != nil {
					if m[1] != efsStateDir {
						return fmt.Errorf("%s: the build accepts STATE_FILE_DIR %s, but %s mounts %s", cmd.pos(), m[1], where, efsStateDir)
					}
					guarded[argv[3]] = true
				}
			}
			for _, src := range []string{"efs-utils/src/mount_efs/__init__.py", "efs-utils/src/watchdog/__init__.py"} {
				if !guarded[src] {
					return fmt.Errorf("%s: stage %s does not check STATE_FILE_DIR in %s against %s", fetch.from.pos(), fetchStage, src, efsStateDir)
				}
			}
			return nil
		}},
		{"efs-utils reads its config from " + etcAmazonEfs, func(corev1.Container, map[string]corev1.Volume) error {
			want := []string{"grep", "-Eq", `^CONFIG_FILE = ["']` + etcAmazonEfs + `/efs-utils.conf["']$`, "efs-utils/src/mount_efs/__init__.py"}
			if !slices.ContainsFunc(fetchCmds, func(cmd command) bool { return slices.Equal(cmd.program("grep"), want) }) {
				return fmt.Errorf("%s: stage %s does not check that mount.efs reads %s/efs-utils.conf", fetch.from.pos(), fetchStage, etcAmazonEfs)
			}
			return nil
		}},
	}
}

func TestNodeDaemonSetUsesWhatTheImagesProvide(t *testing.T) {
	container, volumes := nodeDriverContainer(t)
	for _, nc := range nodeChecks(t) {
		t.Run(nc.name, func(t *testing.T) {
			if err := nc.check(container, volumes); err != nil {
				t.Error(err)
			}
		})
	}
}

// The node DaemonSet is the operator's to edit, so the checks above are shown to fail on broken
// copies of it here rather than by editing the asset.
func TestNodeChecksCatchBrokenDaemonSets(t *testing.T) {
	checks := map[string]nodeCheck{}
	for _, nc := range nodeChecks(t) {
		checks[nc.name] = nc
	}
	unmount := func(dir string) func(*corev1.Container, map[string]corev1.Volume) {
		return func(c *corev1.Container, _ map[string]corev1.Volume) {
			c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return path.Clean(m.MountPath) == path.Clean(dir) })
		}
	}
	mountAt := func(dir string) func(*corev1.Container, map[string]corev1.Volume) {
		return func(c *corev1.Container, _ map[string]corev1.Volume) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "efs-state-dir", MountPath: dir})
		}
	}
	tests := []struct {
		name   string
		mutate func(*corev1.Container, map[string]corev1.Volume)
		check  string
	}{
		{"config dir not mounted", unmount(driverFlagDefaults[configDirFlag]), "the config dir the driver symlinks to is a host directory"},
		{"config dir flag points elsewhere", func(c *corev1.Container, _ map[string]corev1.Volume) {
			c.Args = append(c.Args, "--"+configDirFlag+"=/var/lib/efs")
		}, "the config dir the driver symlinks to is a host directory"},
		{"config dir backed by an emptyDir", func(c *corev1.Container, volumes map[string]corev1.Volume) {
			for _, m := range c.VolumeMounts {
				if m.MountPath == driverFlagDefaults[configDirFlag] {
					volumes[m.Name] = corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
				}
			}
		}, "the config dir the driver symlinks to is a host directory"},
		{"legacy dir from another host path", func(c *corev1.Container, volumes map[string]corev1.Volume) {
			for _, m := range c.VolumeMounts {
				if m.MountPath == driverFlagDefaults[legacyConfigDirFlag] {
					v := volumes[m.Name]
					v.HostPath = &corev1.HostPathVolumeSource{Path: "/etc/amazon/efs-legacy"}
					volumes[m.Name] = v
				}
			}
		}, "the legacy config dir is the host's " + legacyHostConfig},
		{"a volume over /etc/amazon/efs", mountAt(etcAmazonEfs), "nothing is mounted over " + etcAmazonEfs + ", where the driver puts its symlink"},
		{"a volume over the static files", mountAt("/etc/amazon/efs-static-files"), "the static files are where the driver copies them from"},
		{"static files flag not where the image has them", func(c *corev1.Container, _ map[string]corev1.Volume) {
			c.Args = append(c.Args, "--"+staticFilesFlag+"=/opt/efs-static/")
		}, "the static files are where the driver copies them from"},
		{"state dir not mounted", unmount(efsStateDir), "efs-utils' state dir is a host directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, ok := checks[tt.check]
			if !ok {
				t.Fatalf("no check %q", tt.check)
			}
			container, volumes := nodeDriverContainer(t)
			if err := nc.check(container, volumes); err != nil {
				t.Fatalf("the check fails before breaking anything: %v", err)
			}
			tt.mutate(&container, volumes)
			if err := nc.check(container, volumes); err == nil {
				t.Errorf("%q passes on a DaemonSet with %s", tt.check, tt.name)
			} else {
				t.Logf("caught: %v", err)
			}
		})
	}
}
