package testbed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/images/registry"
)

// A stack with Options.RealNode runs its whole cluster (etcd, the control plane, OLM, CoreDNS,
// containerd, kubelet, kube-proxy and every pod) inside one network namespace it creates. The
// namespace holds only lo, a bridge without ports that carries the node address, and the pods'
// bridge: no veth to the host and no default route, so no pod or component can reach any
// address outside it. The host reaches the API server through a forwarder on 127.0.0.1, and
// containerd reaches the stack's registry through one that dials back to the host's loopback.
const (
	// ClusterDNS is the address of a RealNode stack's cluster DNS, which pods with a cluster
	// DNS policy get as their nameserver.
	ClusterDNS = nodeIP
	// NodeResolver is the nameserver of the real node's own resolv.conf, which pods with
	// dnsPolicy Default get, as a cloud node's pods get its VPC resolver. Nothing answers on
	// it: the node resolves no name outside the cluster.
	NodeResolver = "127.0.0.53"
	// RealNodeName is the kubelet node of a RealNode stack.
	RealNodeName = "csi-olm-node"
	// RealNodeLabel marks the real node, so that tests never confuse it with kwok's fakes.
	RealNodeLabel = "csi-olm.io/real-node"

	nodeIP      = "10.200.0.1"
	nodeCIDR    = nodeIP + "/24"
	nodeSubnet  = "10.200.0.0/24"
	podSubnet   = "10.244.0.0/24"
	podGateway  = "10.244.0.1"
	serviceCIDR = "10.96.0.0/24"

	// securePort is the API server's port inside the namespace, which it has to itself.
	securePort = 6443
	// kubeletRoot is fixed: CSI node plugins mount kubelet's plugin directories by these
	// host paths, so the DaemonSets are run exactly as they ship. It also makes the real node
	// one per machine.
	kubeletRoot = "/var/lib/kubelet"
	// PauseImage is the sandbox image, served from the stack's registry like every image.
	PauseImage = "registry.k8s.io/pause:3.10.2"
)

// Upstreams are the registries that a real node's containerd reads from the stack's registry,
// under <registry>/<upstream>/..., so that images are pulled by their unmodified names.
var Upstreams = []string{"quay.io", "registry.k8s.io", "docker.io", "registry.redhat.io"}

// kubeletSysctls are the host sysctls kubelet sets itself on start.
var kubeletSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops", "kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes"}

// cgroupHierarchies lists the cgroup v1 hierarchies mounted under /sys/fs/cgroup; a cgroup v2
// host has one, the root itself.
func cgroupHierarchies() ([]string, error) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}, nil
	}
	entries, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join("/sys/fs/cgroup", e.Name())
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}

// realNodeTools are the tools a real node runs beyond the cluster's: the kubelet, kube-proxy, the
// sandbox's pause binary, the cluster DNS, the probe of OLM's registry pods and the bundle
// copier of its bundle-unpack Jobs.
var realNodeTools = []string{"kubelet", "kube-proxy", "pause", "coredns", "grpc_health_probe", "cpb"}

// busybox is Debian's statically linked busybox (package busybox-static): the cp of OLM's util
// image, which needs a cp that runs on an empty base.
const busybox = "/bin/busybox"

// checkRealNodeHost says what this machine lacks for a real node, all of it at once.
func checkRealNodeHost(t Tools) error {
	have := func(name string) bool {
		if filepath.IsAbs(name) {
			_, err := os.Stat(name)
			return err == nil
		}
		_, err := exec.LookPath(name)
		return err == nil
	}
	if missing := realNodeMissing(os.Geteuid(), have, t); len(missing) > 0 {
		return fmt.Errorf("this machine cannot run a real node; it lacks:\n  %s", strings.Join(missing, "\n  "))
	}
	return nil
}

// realNodeMissing lists what a real node needs and the machine lacks: root, the programs
// (have is asked for a command name or an absolute path) and the tools.
func realNodeMissing(euid int, have func(string) bool, t Tools) []string {
	var missing []string
	if euid != 0 {
		missing = append(missing, "root: a real node creates a network namespace, cgroups and mounts (run as root, as CI does)")
	}
	for _, bin := range []string{"containerd", "runc", "ctr", "nsenter", "unshare", "ip", "socat", "iptables"} {
		if !have(bin) {
			missing = append(missing, bin+" (`make node-deps` installs it from Debian's packages)")
		}
	}
	if !have(busybox) {
		missing = append(missing, busybox+", the cp of OLM's util image (`make node-deps` installs busybox-static)")
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if !have(filepath.Join(cniBinDir, plugin)) {
			missing = append(missing, "CNI plugin "+plugin+" in "+cniBinDir+" (`make node-deps`)")
		}
	}
	for _, name := range realNodeTools {
		if path := t.Path(name); path == "" || !have(path) {
			missing = append(missing, name+" (`make tools` builds it)")
		}
	}
	return missing
}

const cniBinDir = "/usr/lib/cni"

// UndoAbandonedNode undoes the host changes of a real node whose processes are gone (the
// process that started it crashed, or was killed), and refuses while a real node runs: one
// machine runs one, because CSI node plugins use kubelet's fixed host paths.
func UndoAbandonedNode(logf func(string, ...any)) error {
	old, err := readHostChanges()
	if err != nil || old == nil {
		return err
	}
	if old.inUse() {
		return fmt.Errorf("a real node is already running on this machine (stack %s, started by pid %d): one machine runs one, because CSI node plugins use kubelet's fixed host paths; stop it first (`csi-olm dev down`)", old.Dir, old.Owner)
	}
	logf("undoing the host changes of an abandoned real node (stack %s)", old.Dir)
	return old.undo()
}

// prepareRealNode claims the machine's real node (undoing the host changes of one abandoned by
// a crash first), records the host's state and creates the network namespace with its
// forwarders. Everything it changes on the host is in s.host before it is changed.
func (s *Stack) prepareRealNode(ctx context.Context) error {
	if err := checkRealNodeHost(s.opts.Tools); err != nil {
		return err
	}
	if err := UndoAbandonedNode(s.opts.Logf); err != nil {
		return err
	}
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	suffix := hex.EncodeToString(id)
	_, err := os.Stat("/run/netns")
	h := &hostChanges{
		Dir: s.Dir, Owner: os.Getpid(), Netns: "csi-olm-" + suffix, HostNetns: "csi-olm-host-" + suffix,
		RunNetnsCreated: errors.Is(err, fs.ErrNotExist), RunNetnsWasMount: isMountPoint("/run/netns"), NetnsBefore: netnsEntries(),
		Sysctls: map[string]string{}, RuncRoot: filepath.Join(s.Dir, "runc"), Started: time.Now(), path: hostChangesPath(),
	}
	if err := h.save(); err != nil {
		return err
	}
	s.host = h
	if err := h.recordSysctls(kubeletSysctls...); err != nil {
		return err
	}
	if err := h.mkdirRecorded(kubeletRoot); err != nil {
		return err
	}
	return s.createNetns(ctx)
}

// createNetns creates the namespace, its bridge with the node address, and the forwarder that
// lets containerd inside pull from the stack's registry on the host's loopback, at the same
// host:port, so an image reference means the same inside and out.
func (s *Stack) createNetns(ctx context.Context) error {
	h := s.host
	steps := [][]string{
		{"netns", "add", h.Netns},
		{"netns", "attach", h.HostNetns, strconv.Itoa(os.Getpid())},
		{"-n", h.Netns, "link", "set", "lo", "up"},
		// The node address lives on a bridge with no ports: this kernel has no dummy driver.
		{"-n", h.Netns, "link", "add", "node0", "type", "bridge"},
		{"-n", h.Netns, "addr", "add", nodeCIDR, "dev", "node0"},
		{"-n", h.Netns, "link", "set", "node0", "up"},
		// Components outside pods (OLM's catalog operator) dial Service IPs too: without a route
		// the kernel refuses before kube-proxy's rules could rewrite the destination.
		{"-n", h.Netns, "route", "add", serviceCIDR, "dev", "node0"},
	}
	for _, args := range steps {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// Namespaced sysctls, set inside only: pods' traffic is routed through the node, and no
	// IPv6 address exists to leak through.
	script := "echo 1 > /proc/sys/net/ipv4/ip_forward && " +
		"echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 && echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6"
	if out, err := exec.CommandContext(ctx, "nsenter", "--net="+s.netnsPath(), "sh", "-c", script).CombinedOutput(); err != nil {
		return fmt.Errorf("setting the namespace's sysctls: %v: %s", err, out)
	}
	if s.Registry == "" {
		return fmt.Errorf("a real node pulls from the stack's registry: start it first")
	}
	_, port, _ := net.SplitHostPort(s.Registry)
	_, err := s.startInNetns("registry-forwarder", nil, "socat", forwarder(port, "/run/netns/"+h.HostNetns, s.Registry)...)
	return err
}

// forwarder is socat's arguments to listen on port of the loopback of the namespace it runs in
// and hand each connection to a socat in the namespace at netnsPath that dials target.
func forwarder(port, netnsPath, target string) []string {
	return forwarderOn("127.0.0.1", port, netnsPath, target)
}

// forwarderOn is forwarder listening on the address bind instead of loopback.
func forwarderOn(bind, port, netnsPath, target string) []string {
	// socat splits an address at ':' and ',': the inner address's colons are escaped.
	return []string{
		"TCP-LISTEN:" + port + ",bind=" + bind + ",reuseaddr,fork",
		"EXEC:nsenter --net=" + netnsPath + " socat STDIO TCP\\:" + strings.ReplaceAll(target, ":", "\\:"),
	}
}

func (s *Stack) netnsPath() string { return filepath.Join("/run/netns", s.host.Netns) }

// startInNetns starts a component inside the stack's network namespace. nsenter enters only the
// network namespace and execs, so the component keeps the host's mounts and cgroups (which
// kubelet and containerd must share) and its PID.
func (s *Stack) startInNetns(name string, env []string, bin string, args ...string) (*process, error) {
	return s.start(name, env, "nsenter", append([]string{"--net=" + s.netnsPath(), "--", bin}, args...)...)
}

// startWithClusterDNS starts a component inside the namespace that resolves Service names the
// way pods do, through the cluster's DNS: it gets a private mount namespace whose
// /etc/resolv.conf names CoreDNS. OLM's catalog operator needs it to reach registry pods.
func (s *Stack) startWithClusterDNS(name string, env []string, bin string, args ...string) (*process, error) {
	resolv := filepath.Join(s.Dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+ClusterDNS+"\nsearch svc.cluster.local cluster.local\noptions ndots:5\n"), 0o644); err != nil {
		return nil, err
	}
	wrapped := append([]string{"--mount", "--propagation", "private", "--", "sh", "-c",
		`mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolv, bin}, args...)
	return s.startInNetns(name, env, "unshare", wrapped...)
}

// nodeIdentities are the users (and their group) of the real node's components, whose tokens
// are written into tokens.csv with the admin's.
func nodeIdentities() map[string]string {
	return map[string]string{
		"system:node:" + RealNodeName: "system:nodes",
		"system:kube-proxy":           "",
	}
}

// startRealNode runs CoreDNS, containerd, kubelet and kube-proxy in the namespace and waits for
// the node to be Ready; the control plane already runs there.
func (s *Stack) startRealNode(ctx context.Context) error {
	begin := time.Now()
	if err := s.pushPause(ctx); err != nil {
		return err
	}
	if err := s.startCoreDNS(ctx); err != nil {
		return err
	}
	containerd, sock, err := s.startContainerd(ctx)
	if err != nil {
		return err
	}
	s.host.Keeper = containerd.PID
	if err := s.host.save(); err != nil {
		return err
	}
	kubelet, err := s.startKubelet(ctx, sock)
	if err != nil {
		return err
	}
	if err := s.startKubeProxy(ctx); err != nil {
		return err
	}
	if err := s.waitNodeReady(ctx, kubelet, RealNodeName); err != nil {
		return err
	}
	// Roles kubelet may not give itself: the node is worker and control plane, so operators
	// that prefer control-plane nodes and DaemonSets for workers all land on it.
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]string{
		"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/master": "",
		"node-role.kubernetes.io/control-plane": "", RealNodeLabel: "true",
	}}}
	raw, _ := json.Marshal(patch)
	node := &corev1.Node{}
	node.Name = RealNodeName
	if err := s.Client.Patch(ctx, node, client.RawPatch(types.MergePatchType, raw)); err != nil {
		return fmt.Errorf("labelling node %s: %w", RealNodeName, err)
	}
	s.goBackground(s.recordHostPaths, time.Second)
	s.Timings["node"] = time.Since(begin)
	return nil
}

// recordHostPaths adds to the host record the hostPath volumes kubelet creates for the node's
// pods when missing (DirectoryOrCreate, FileOrCreate), so that the undo, even after a crash,
// knows which host paths to check.
func (s *Stack) recordHostPaths(ctx context.Context) {
	var pods corev1.PodList
	if err := s.Client.List(ctx, &pods, client.MatchingFields{"spec.nodeName": RealNodeName}); err != nil {
		return // the next round retries; the API server may be restarting
	}
	var paths []string
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if hp := v.HostPath; hp != nil && hp.Type != nil &&
				(*hp.Type == corev1.HostPathDirectoryOrCreate || *hp.Type == corev1.HostPathFileOrCreate) {
				paths = append(paths, filepath.Clean(hp.Path))
			}
		}
	}
	if err := s.host.addHostPaths(paths...); err != nil {
		s.opts.Logf("recording the node's host paths: %v", err)
	}
}

// startCoreDNS runs the cluster DNS on the node address, answering from the API server. It has
// no upstream: a name outside the cluster fails instead of leaving the namespace.
func (s *Stack) startCoreDNS(ctx context.Context) error {
	corefile := filepath.Join(s.Dir, "Corefile")
	content := fmt.Sprintf(`.:53 {
    bind %s
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s testbed
        pods insecure
    }
    health 127.0.0.1:8080
    ready 127.0.0.1:8181
}
`, ClusterDNS, s.netnsKubeconfig)
	if err := os.WriteFile(corefile, []byte(content), 0o644); err != nil {
		return err
	}
	p, err := s.startInNetns("coredns", nil, s.opts.Tools.CoreDNS, "-conf", corefile)
	if err != nil {
		return err
	}
	return poll(ctx, p, "CoreDNS /ready", func(ctx context.Context) error {
		return httpOK(ctx, s.componentHTTP(nil), "http://127.0.0.1:8181/ready", "")
	})
}

// containerdConfig is containerd 1.6's configuration (version 2) for the node: its own root,
// state and socket in the stack's directory, runc state where the undo finds it (the shim adds
// a directory per containerd namespace), images through
// the stack's registry (certs.d), and oom_score_adj left alone (this VM withholds
// CAP_SYS_RESOURCE, so runc fails to set -998).
func (s *Stack) containerdConfig(dir string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %[5]q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[8]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), s.containerdSocket(), PauseImage,
		s.host.RuncRoot, cniBinDir, filepath.Join(dir, "cni"), filepath.Join(dir, "certs.d"))
}

// writeRegistryHosts makes containerd read the stack's registry for the registry's own address
// and, under <registry>/<upstream>/, for every upstream, so shipped references resolve unchanged.
func (s *Stack) writeRegistryHosts(dir string) error {
	write := func(host, content string) error {
		d := filepath.Join(dir, host)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(content), 0o644)
	}
	if err := write(s.Registry, fmt.Sprintf("server = \"http://%s\"\n", s.Registry)); err != nil {
		return err
	}
	for _, u := range Upstreams {
		content := fmt.Sprintf("server = \"https://%s\"\n\n[host.\"http://%s/v2/%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n", u, s.Registry, u)
		if err := write(u, content); err != nil {
			return err
		}
	}
	return nil
}

// cniConfig is the pods' network: a bridge on the node with routes only to the node, pod and
// service ranges, and no masquerading, so nothing is ever rewritten to leave.
func (s *Stack) cniConfig() ([]byte, error) {
	// The pod subnet is on the pod's own link; the node and Services are through the bridge.
	routes := []map[string]string{{"dst": nodeSubnet}, {"dst": serviceCIDR}}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       s.host.Netns,
		"plugins": []map[string]any{{
			"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": podSubnet, "gateway": podGateway}}},
				"routes":  routes,
				"dataDir": filepath.Join(s.Dir, "cni-ipam"),
			},
		}},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// containerdSocket is containerd's socket. It lives in a short directory of its own: a unix
// socket's path has at most 104 bytes, and containerd adds ".ttrpc" to it.
func (s *Stack) containerdSocket() string {
	return filepath.Join(hostChangesDir, s.host.Netns, "containerd.sock")
}

func (s *Stack) startContainerd(ctx context.Context) (*process, string, error) {
	dir := filepath.Join(s.Dir, "containerd")
	if err := s.host.mkdirRecorded(filepath.Dir(s.containerdSocket())); err != nil {
		return nil, "", err
	}
	for _, d := range []string{filepath.Join(dir, "cni"), filepath.Join(dir, "certs.d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, "", err
		}
	}
	cni, err := s.cniConfig()
	if err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "cni", "10-testbed.conflist"), cni, 0o644); err != nil {
		return nil, "", err
	}
	if err := s.writeRegistryHosts(filepath.Join(dir, "certs.d")); err != nil {
		return nil, "", err
	}
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(s.containerdConfig(dir)), 0o644); err != nil {
		return nil, "", err
	}
	sock := s.containerdSocket()
	p, err := s.startInNetns("containerd", nil, "containerd", "--config", config, "--log-level", "warn")
	if err != nil {
		return nil, "", err
	}
	err = poll(ctx, p, "containerd's socket", func(ctx context.Context) error {
		return exec.CommandContext(ctx, "ctr", "--address", sock, "version").Run()
	})
	return p, sock, err
}

// kubeletConfig is kubelet's configuration for this machine kind, every setting found by trying:
// cgroup v1 with the cgroupfs driver under a cgroupRoot of the node's own, swap tolerated,
// a node resolv.conf of the test bed's (NodeResolver) rather than the machine's, and eviction thresholds off
// so a busy disk does not evict the pods under test.
func (s *Stack) kubeletConfig(cgroupRoot, sock, clientCA string) map[string]any {
	return map[string]any{
		"apiVersion":                  "kubelet.config.k8s.io/v1beta1",
		"kind":                        "KubeletConfiguration",
		"address":                     nodeIP,
		"readOnlyPort":                0,
		"healthzBindAddress":          "127.0.0.1",
		"healthzPort":                 10248,
		"containerRuntimeEndpoint":    "unix://" + sock,
		"cgroupDriver":                "cgroupfs",
		"cgroupRoot":                  cgroupRoot,
		"failCgroupV1":                false,
		"failSwapOn":                  false,
		"resolvConf":                  filepath.Join(s.Dir, "node-resolv.conf"),
		"clusterDomain":               "cluster.local",
		"clusterDNS":                  []string{ClusterDNS},
		"podLogsDir":                  filepath.Join(s.Dir, "pod-logs"),
		"evictionHard":                map[string]string{"memory.available": "0%", "nodefs.available": "0%", "imagefs.available": "0%"},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"serializeImagePulls":         false,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": clientCA},
		},
		"authorization": map[string]any{"mode": "Webhook"},
	}
}

func (s *Stack) startKubelet(ctx context.Context, sock string) (*process, error) {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	cgroupRoot := "/" + s.host.Netns
	for _, h := range hierarchies {
		dir := filepath.Join(h, cgroupRoot)
		s.host.Cgroups = append(s.host.Cgroups, dir)
		if err := s.host.save(); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating kubelet's cgroup root: %w", err)
		}
		// A cpuset cgroup takes no task until it has CPUs and memory nodes of its own.
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, f), v, 0o644)
				}
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return nil, fmt.Errorf("setting %s of kubelet's cgroup root: %w", f, err)
				}
			}
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "node-resolv.conf"), []byte("nameserver "+NodeResolver+"\n"), 0o644); err != nil {
		return nil, err
	}
	config, err := yaml.Marshal(s.kubeletConfig(cgroupRoot, sock, filepath.Join(s.Dir, "kubelet-client-ca.crt")))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(s.Dir, "kubelet.yaml")
	if err := os.WriteFile(path, config, 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "pod-logs"), 0o755); err != nil {
		return nil, err
	}
	return s.startInNetns("kubelet", nil, s.opts.Tools.Kubelet,
		"--config="+path, "--kubeconfig="+s.nodeKubeconfigs["system:node:"+RealNodeName],
		"--hostname-override="+RealNodeName, "--node-ip="+nodeIP, "--root-dir="+kubeletRoot,
		"--cert-dir="+filepath.Join(s.Dir, "kubelet-pki"), "--v=1")
}

// startKubeProxy programs Services with iptables inside the namespace. Its conntrack settings
// are 0: it would write host-wide sysctls otherwise.
func (s *Stack) startKubeProxy(ctx context.Context) error {
	config := map[string]any{
		"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
		"kind":               "KubeProxyConfiguration",
		"clientConnection":   map[string]any{"kubeconfig": s.nodeKubeconfigs["system:kube-proxy"]},
		"mode":               "iptables",
		"clusterCIDR":        podSubnet,
		"hostnameOverride":   RealNodeName,
		"healthzBindAddress": "127.0.0.1:10256",
		"metricsBindAddress": "127.0.0.1:10249",
		"conntrack": map[string]any{
			"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s",
		},
	}
	raw, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	path := filepath.Join(s.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return err
	}
	p, err := s.startInNetns("kube-proxy", nil, s.opts.Tools.KubeProxy, "--config="+path, "--v=1")
	if err != nil {
		return err
	}
	return poll(ctx, p, "kube-proxy /healthz", func(ctx context.Context) error {
		return httpOK(ctx, s.componentHTTP(nil), "http://127.0.0.1:10256/healthz", "")
	})
}

// writeKubeletCredentials creates the authority kubelet trusts for client certificates and the
// certificate the API server presents to kubelet (logs, exec, port-forward), in system:masters
// so that kubelet's webhook authorization admits it.
func (s *Stack) writeKubeletCredentials() (certFile, keyFile string, err error) {
	ca, err := newCertAuthority("csi-olm test bed kubelet clients")
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "kubelet-client-ca.crt"), ca.pem(), 0o600); err != nil {
		return "", "", err
	}
	return ca.writeClient(s.Dir, "apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
}

// connectRealNode writes the kubeconfigs of the components inside the namespace, starts the
// host's forwarder to the API server and connects the stack's clients through it.
func (s *Stack) connectRealNode(server string, ca []byte, token string) error {
	s.netnsKubeconfig = filepath.Join(s.Dir, "kubeconfig-netns")
	if err := writeKubeconfig(s.netnsKubeconfig, server, "", ca, adminUser, token); err != nil {
		return err
	}
	s.nodeKubeconfigs = map[string]string{}
	for user, t := range s.nodeTokens {
		path := filepath.Join(s.Dir, "kubeconfig-"+strings.ReplaceAll(user, ":", "-"))
		if err := writeKubeconfig(path, server, "", ca, user, t); err != nil {
			return err
		}
		s.nodeKubeconfigs[user] = path
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	fwd, err := s.start("apiserver-forwarder", nil, "socat",
		forwarder(strconv.Itoa(port), s.netnsPath(), nodeIP+":"+strconv.Itoa(securePort))...)
	if err != nil {
		return err
	}
	// socat listens a moment after it starts; a client that dials before gets connection
	// refused (seen on a loaded machine, as the first request of `dev up` failed).
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := poll(ctx, fwd, "the API server forwarder listening on "+addr, func(ctx context.Context) error {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}); err != nil {
		return err
	}
	// The API server's self-signed certificate names localhost, not the forwarded address.
	return s.connect("https://127.0.0.1:"+strconv.Itoa(port), "localhost", ca, token)
}

// componentKubeconfig is the admin kubeconfig of control-plane components: the one for inside
// the namespace on a real node.
func (s *Stack) componentKubeconfig() string {
	if s.host != nil {
		return s.netnsKubeconfig
	}
	return s.Kubeconfig
}

// DialInNetns opens a connection from inside a real node's network namespace, as a component
// or pod there would: the socket is created while the calling thread is in the namespace, and
// stays there. On a stack without a real node it dials from the host.
func (s *Stack) DialInNetns(ctx context.Context, network, addr string) (net.Conn, error) {
	if s.host == nil {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	var conn net.Conn
	err := inNamespace(s.netnsPath(), func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// pushPause pushes the pause image, built from the tools' statically linked pause binary, to
// the stack's registry under the name containerd asks for.
func (s *Stack) pushPause(ctx context.Context) error {
	binary, err := os.ReadFile(s.opts.Tools.Pause)
	if err != nil {
		return fmt.Errorf("reading the pause binary: %w", err)
	}
	return s.PushBinaryImage(ctx, PauseImage, BinaryImage{Binary: binary, Paths: []string{"/pause"}})
}

// BinaryImage is an image holding one statically linked binary: what the real node's pause
// image, test probes and stand-ins for other projects' images need.
type BinaryImage struct {
	Binary []byte
	// Paths are where the image holds the binary; it runs from the first.
	Paths []string
	// Root runs it as root, as the upstream images of CSI drivers and most sidecars do; it runs
	// as a non-root user otherwise.
	Root bool
}

// PushBinaryImage pushes img under ref.
func (s *Stack) PushBinaryImage(ctx context.Context, ref string, img BinaryImage) error {
	if len(img.Paths) == 0 {
		return fmt.Errorf("image %s: no path for the binary", ref)
	}
	platform, err := images.StaticPlatform("the binary of "+ref, img.Binary)
	if err != nil {
		return err
	}
	files := make([]images.File, 0, len(img.Paths))
	for _, p := range img.Paths {
		files = append(files, images.File{Path: p, Mode: 0o755, Data: img.Binary})
	}
	layer, err := images.Layer(files)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	user := "65532"
	if img.Root {
		user = "0"
	}
	built, err := images.Image(nil, images.Config{Entrypoint: img.Paths[:1], User: user, Platform: platform}, layer)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	_, err = s.RegistryClient().Push(ctx, ref, built)
	return err
}

// RegistryClient reads and writes the stack's registry by the names a real node pulls: an
// image of an upstream registry is stored under <registry>/<upstream>/.
func (s *Stack) RegistryClient() *registry.Client {
	c := &registry.Client{}
	for _, u := range Upstreams {
		c.Mirrors = append(c.Mirrors, registry.Mirror{Source: u, Mirror: s.Registry + "/" + u})
	}
	return c
}

// Netns is the name of a real node's network namespace (under /run/netns), "" without one.
func (s *Stack) Netns() string {
	if s.host == nil {
		return ""
	}
	return s.host.Netns
}
