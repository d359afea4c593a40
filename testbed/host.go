package testbed

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A real node changes the host outside its stack's directory: a network namespace, cgroups in
// every hierarchy, mounts (kubelet's volumes, containerd's snapshots), kubelet's root directory
// and a few sysctls kubelet sets. hostChanges records each change in a file before making it,
// so that Stop, or after a crash of the process that started the node the next real node's
// start (or `csi-olm dev down`), undoes exactly what was done and nothing else.
type hostChanges struct {
	// Dir is the stack's directory: processes carrying its MarkerEnv and mounts below it are
	// the node's.
	Dir string `json:"dir"`
	// Netns is the network namespace the cluster runs in; HostNetns names the host's own, so
	// that a forwarder inside can dial out to the host's loopback.
	Netns     string `json:"netns,omitempty"`
	HostNetns string `json:"hostNetns,omitempty"`
	// RunNetnsCreated and RunNetnsWasMount say whether `ip netns add` created /run/netns and
	// made it a mount point; both are undone only when no other namespace is left in it.
	RunNetnsCreated  bool `json:"runNetnsCreated"`
	RunNetnsWasMount bool `json:"runNetnsWasMount"`
	// NetnsBefore lists /run/netns before the node started: containerd creates each pod's
	// network namespace there (cni-<uuid>), and those that are new are the node's.
	NetnsBefore []string `json:"netnsBefore"`
	// Sysctls maps /proc/sys paths to their values before the node started.
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// Cgroups are the directories created for kubelet's cgroupRoot, one per hierarchy.
	Cgroups []string `json:"cgroups,omitempty"`
	// Created are directories that did not exist before (kubelet's root), removed at the end.
	Created []string `json:"created,omitempty"`
	// RuncRoot is where runc keeps the state of the node's containers.
	RuncRoot string `json:"runcRoot,omitempty"`
	// Owner is the PID of the process that starts the node, Keeper that of the node's
	// containerd. While either runs (the owner starting the node, containerd with the stack's
	// marker) the node is in use; after that its changes are abandoned and may be undone.
	Owner  int `json:"owner"`
	Keeper int `json:"keeper,omitempty"`
	// Started is when the record began, before kubelet ran: a path born later is the node's.
	Started time.Time `json:"started"`
	// HostPaths are the hostPath volumes kubelet may create for the node's pods
	// (DirectoryOrCreate, FileOrCreate), as seen while the node ran; the undo removes those
	// born after Started.
	HostPaths []string `json:"hostPaths,omitempty"`

	path string
	// mu guards HostPaths, which the stack's process records while the node runs, and save.
	mu sync.Mutex
}

// hostChangesDir holds the record of the real node of this machine. It lives in /run, so a
// reboot, which undoes every change anyway, also forgets the record.
const hostChangesDir = "/run/csi-olm"

func hostChangesPath() string { return filepath.Join(hostChangesDir, "realnode.json") }

// save writes the record atomically: a crash leaves the old or the new record, never half.
func (h *hostChanges) save() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	raw, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return err
	}
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("recording host changes: %w", err)
	}
	return os.Rename(tmp, h.path)
}

// readHostChanges reads the record of this machine's real node; nil when there is none.
func readHostChanges() (*hostChanges, error) {
	path := hostChangesPath()
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var h hostChanges
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("%s is not a host-change record (%w): inspect and remove it by hand", path, err)
	}
	h.path = path
	return &h, nil
}

// inUse reports whether the node the record describes still runs, or is being started by
// another process.
func (h *hostChanges) inUse() bool {
	if h.Keeper > 0 && alive(h.Keeper) && hasMarker(h.Keeper, h.Dir) {
		return true
	}
	return h.Keeper == 0 && h.Owner > 0 && h.Owner != os.Getpid() && alive(h.Owner)
}

// recordSysctls remembers sysctls that a component (kubelet) sets itself.
func (h *hostChanges) recordSysctls(names ...string) error {
	for _, name := range names {
		path := "/proc/sys/" + strings.ReplaceAll(name, ".", "/")
		old, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading sysctl %s: %w", name, err)
		}
		if _, ok := h.Sysctls[path]; !ok {
			h.Sysctls[path] = strings.TrimSpace(string(old))
		}
	}
	return h.save()
}

// mkdirRecorded creates a directory that the undo removes, unless it already existed.
func (h *hostChanges) mkdirRecorded(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	h.Created = append(h.Created, dir)
	if err := h.save(); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

// undo puts the host back as the record found it, going on past failures so that one stuck
// step does not leave the rest behind; it returns every failure. Each step is idempotent.
func (h *hostChanges) undo() error {
	var errs []error
	// Containers first: their processes hold the mounts and cgroups below. runc deletes its
	// state; every process of a container, whatever became of that state, is in a cgroup below
	// kubelet's cgroup root, and is killed from there.
	if h.RuncRoot != "" {
		errs = append(errs, killContainers(h.RuncRoot))
	}
	pids := Survivors(h.Dir)
	for _, dir := range h.Cgroups {
		pids = append(pids, cgroupProcs(dir)...)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitGone(pids)
	errs = append(errs, unmountBelow(append([]string{h.Dir}, h.Created...)...))
	for i := len(h.Cgroups) - 1; i >= 0; i-- {
		errs = append(errs, removeCgroup(h.Cgroups[i]))
	}
	errs = append(errs, h.removePodNetns())
	for _, ns := range []string{h.Netns, h.HostNetns} {
		if ns == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("ip netns delete %s: %v: %s", ns, err, out))
			}
		}
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil && len(entries) == 0 {
		if !h.RunNetnsWasMount && isMountPoint("/run/netns") {
			errs = append(errs, unix.Unmount("/run/netns", unix.MNT_DETACH))
		}
		if h.RunNetnsCreated {
			errs = append(errs, os.Remove("/run/netns"))
		}
	}
	for path, value := range h.Sysctls {
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s to %s: %w", path, value, err))
		}
	}
	for i := len(h.Created) - 1; i >= 0; i-- {
		if err := os.RemoveAll(h.Created[i]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, path := range h.HostPaths {
		errs = append(errs, removeBornAfter(path, h.Started))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("undoing the real node's host changes (record %s kept): %w", h.path, err)
	}
	if err := os.Remove(h.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The record's directory goes with the last record.
	_ = os.Remove(filepath.Dir(h.path))
	return nil
}

// podNetnsPrefix names the network namespaces containerd creates for pods in /run/netns.
const podNetnsPrefix = "cni-"

// netnsEntries lists the names in /run/netns.
func netnsEntries() []string {
	entries, _ := os.ReadDir("/run/netns")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// removePodNetns unmounts and removes the pods' network namespaces that appeared since the
// node started; containerd removes them with their pods, a crash leaves them.
func (h *hostChanges) removePodNetns() error {
	var errs []error
	for _, name := range netnsEntries() {
		if !strings.HasPrefix(name, podNetnsPrefix) || slices.Contains(h.NetnsBefore, name) {
			continue
		}
		path := filepath.Join("/run/netns", name)
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", path, err))
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killContainers kills and deletes every container runc keeps under root, one directory per
// containerd namespace.
func killContainers(root string) error {
	namespaces, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range namespaces {
		dir := filepath.Join(root, ns.Name())
		out, err := exec.Command("runc", "--root", dir, "list", "-q").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("runc --root %s list: %w", dir, err))
			continue
		}
		for _, id := range strings.Fields(string(out)) {
			_ = exec.Command("runc", "--root", dir, "kill", "--all", id, "KILL").Run()
			if out, err := exec.Command("runc", "--root", dir, "delete", "--force", id).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("runc delete %s: %v: %s", id, err, out))
			}
		}
	}
	return errors.Join(errs...)
}

// cgroupProcs lists the processes in a cgroup and every cgroup below it.
func cgroupProcs(dir string) []int {
	var pids []int
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		raw, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(raw)) {
			var pid int
			if _, err := fmt.Sscanf(f, "%d", &pid); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// waitGone waits up to 5 s for killed processes to disappear.
func waitGone(pids []int) {
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(pids, alive), nil
	})
}

// mounts lists the mount points of this mount namespace.
func mounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			points = append(points, unescapeMount(fields[4]))
		}
	}
	return points, sc.Err()
}

// unescapeMount decodes the octal escapes mountinfo uses for spaces and the like.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isMountPoint(path string) bool {
	points, _ := mounts()
	return slices.Contains(points, path)
}

// unmountBelow detaches every mount at or below the directories given, deepest first.
func unmountBelow(dirs ...string) error {
	points, err := mounts()
	if err != nil {
		return err
	}
	var mine []string
	for _, p := range points {
		for _, d := range dirs {
			if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
				mine = append(mine, p)
				break
			}
		}
	}
	// Longer paths are deeper; a mount stacked twice on one path is listed twice.
	slices.SortFunc(mine, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range mine {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// removeCgroup removes a cgroup directory and every child, deepest first. A cgroup can only be
// removed once no task is left in it, which the container kill above ensured.
func removeCgroup(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		// The kernel releases a cgroup a moment after its last task is reaped.
		var err error
		_ = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			err = syscall.Rmdir(dirs[i])
			return err == nil || errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.EBUSY), nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}

// HostSnapshot is what a real node may change on the host, read back: the sysctls kubelet
// sets, the top-level cgroups of every hierarchy, /run/netns, kubelet's root, the record's
// directory and the mount table. Two snapshots around a node's life must be equal.
func HostSnapshot() (map[string]string, error) {
	snap := map[string]string{}
	for _, name := range kubeletSysctls {
		raw, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
		if err != nil {
			return nil, err
		}
		snap["sysctl "+name] = strings.TrimSpace(string(raw))
	}
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	for _, h := range hierarchies {
		entries, err := os.ReadDir(h)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() {
				snap["cgroup "+filepath.Join(h, e.Name())] = "present"
			}
		}
	}
	for _, path := range []string{"/run/netns", kubeletRoot, hostChangesDir} {
		if _, err := os.Stat(path); err == nil {
			snap["path "+path] = "present"
		}
	}
	for _, name := range netnsEntries() {
		snap["netns "+name] = "present"
	}
	points, err := mounts()
	if err != nil {
		return nil, err
	}
	for _, p := range points {
		snap["mount "+p] += "+"
	}
	return snap, nil
}

// addHostPaths records hostPath volumes of the node's pods that kubelet may create.
func (h *hostChanges) addHostPaths(paths ...string) error {
	h.mu.Lock()
	added := false
	for _, p := range paths {
		if !slices.Contains(h.HostPaths, p) {
			h.HostPaths = append(h.HostPaths, p)
			added = true
		}
	}
	h.mu.Unlock()
	if !added {
		return nil
	}
	return h.save()
}

// removeBornAfter removes path, and the ancestors that kubelet's MkdirAll created with it,
// when they were born after start; a path that was there before the node is left alone.
func removeBornAfter(path string, start time.Time) error {
	resolved, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	top := ""
	for dir := resolved; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		var st unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil {
			return fmt.Errorf("when was %s created: %w", dir, err)
		}
		if st.Mask&unix.STATX_BTIME == 0 {
			return fmt.Errorf("cannot tell whether the node created %s: the file system keeps no birth time", dir)
		}
		if time.Unix(st.Btime.Sec, int64(st.Btime.Nsec)).Before(start) {
			break
		}
		top = dir
	}
	if top == "" {
		return nil
	}
	return os.RemoveAll(top)
}
