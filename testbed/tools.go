package testbed

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Tools are the binaries and manifests a stack runs, built by hack/tools.sh.
type Tools struct {
	Etcd, APIServer, ControllerManager, Scheduler, Kwok string
	OLM, Catalog, Opm                                   string
	// Registry is the CNCF distribution registry that serves the stack's images.
	Registry string
	// Kubelet, KubeProxy, Pause (the sandbox's binary) and CoreDNS run a real node.
	Kubelet, KubeProxy, Pause, CoreDNS string
	// GRPCHealthProbe is the probe OLM's registry pods run; catalog images carry it.
	GRPCHealthProbe string
	// Cpb is OLM's bundle copier, which its util image carries into bundle images.
	Cpb string
	// CSIProvisioner and KubeRBACProxy are real sidecars of the EFS controller pod, which tests
	// push as images for the real node to run.
	CSIProvisioner, KubeRBACProxy string
	// OperatorController and Catalogd are OLM v1, which a real node runs as pods.
	OperatorController, Catalogd string
	// Kubectl is no stack's: it is the CLI an admin runs against one (README.md's quick start,
	// run as oc).
	Kubectl string
	// KwokCRDs, OLMCRDs, OLMv1CRDs and OpenShiftCRDs are directories of CRD manifests.
	KwokCRDs, OLMCRDs, OLMv1CRDs, OpenShiftCRDs string
}

// toolNames maps hack/tools.sh names to the fields they fill.
func (t *Tools) toolNames() map[string]*string {
	return map[string]*string{
		"etcd": &t.Etcd, "kube-apiserver": &t.APIServer, "kube-controller-manager": &t.ControllerManager,
		"kube-scheduler": &t.Scheduler, "kwok": &t.Kwok, "olm": &t.OLM, "catalog": &t.Catalog, "opm": &t.Opm,
		"kwok-crds": &t.KwokCRDs, "olm-crds": &t.OLMCRDs, "openshift-crds": &t.OpenShiftCRDs,
		"registry": &t.Registry, "kubelet": &t.Kubelet, "kube-proxy": &t.KubeProxy, "pause": &t.Pause,
		"coredns": &t.CoreDNS, "grpc_health_probe": &t.GRPCHealthProbe, "cpb": &t.Cpb,
		"csi-provisioner": &t.CSIProvisioner, "kube-rbac-proxy": &t.KubeRBACProxy,
		"operator-controller": &t.OperatorController, "catalogd": &t.Catalogd, "olmv1-crds": &t.OLMv1CRDs,
		"kubectl": &t.Kubectl,
	}
}

// Path returns the path of the tool hack/tools.sh calls name, "" when it is not set.
func (t Tools) Path(name string) string {
	if p, ok := t.toolNames()[name]; ok {
		return *p
	}
	return ""
}

// Merge returns t with every tool it lacks taken from other.
func (t Tools) Merge(other Tools) Tools {
	theirs := other.toolNames()
	for name, p := range t.toolNames() {
		if *p == "" {
			*p = *theirs[name]
		}
	}
	return t
}

// NeededTools lists the hack/tools.sh names of what a stack with these options runs, so that a
// test of the API server alone never waits for kubelet or OLM to be built.
func NeededTools(opts Options) []string {
	if opts.NoCluster {
		return []string{"registry"}
	}
	// Every level can install the OpenShift CRDs (Stack.InstallOpenShift).
	need := []string{"etcd", "kube-apiserver", "openshift-crds"}
	if opts.Registry || opts.RealNode {
		need = append(need, "registry")
	}
	if opts.Level >= Full {
		need = append(need, "kube-controller-manager", "kube-scheduler")
		if !opts.RealNode {
			need = append(need, "kwok", "kwok-crds")
		}
	}
	if opts.Level >= OLM {
		// An OLM stack serves catalogs: with opm serve, or as images that carry the probe.
		need = append(need, "olm", "catalog", "olm-crds", "opm", "grpc_health_probe")
	}
	if opts.RealNode {
		need = append(need, realNodeTools...)
	}
	slices.Sort(need)
	return slices.Compact(need)
}

// AllTools lists the hack/tools.sh name of every tool a stack can run.
func AllTools() []string {
	var t Tools
	return slices.Sorted(maps.Keys(t.toolNames()))
}

// FindTools asks the repository's hack/tools.sh for the named tools (every tool when none is
// named), building what is missing. It looks for the repository from the working directory
// upwards.
func FindTools(names ...string) (Tools, error) {
	if len(names) == 0 {
		names = AllTools()
	}
	var t Tools
	fields := t.toolNames()
	for _, name := range names {
		if fields[name] == nil {
			return Tools{}, fmt.Errorf("unknown test bed tool %q", name)
		}
	}
	root, err := RepoRoot()
	if err != nil {
		return Tools{}, err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "tools.sh"), names...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Tools{}, fmt.Errorf("hack/tools.sh: %w\n%s", err, stderr.String())
	}
	paths := strings.Fields(string(out))
	if len(paths) != len(names) {
		return Tools{}, fmt.Errorf("hack/tools.sh printed %d paths for %d tools:\n%s", len(paths), len(names), out)
	}
	for i, name := range names {
		*fields[name] = paths[i]
	}
	return t, nil
}

// RepoRoot is the csi-olm checkout the working directory is in (a test's is its package's
// directory): the nearest directory above it holding hack/tools.sh.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "tools.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no hack/tools.sh above the working directory: run from a csi-olm checkout")
		}
		dir = parent
	}
}

// check makes sure every tool the options need is present. A real node's own tools are left to
// checkRealNodeHost, which lists them with whatever else the machine lacks.
func (t Tools) check(opts Options) error {
	var missing []string
	for _, name := range NeededTools(opts) {
		if opts.RealNode && slices.Contains(realNodeTools, name) {
			continue
		}
		if path := t.Path(name); path == "" {
			missing = append(missing, name)
		} else if _, err := os.Stat(path); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", name, err))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools for a %s stack: %s; `make tools` builds them", opts.Level, strings.Join(missing, ", "))
	}
	return nil
}
