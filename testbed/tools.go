package testbed

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	// CSIProvisioner and KubeRBACProxy are real sidecars of the EFS controller pod, which tests
	// push as images for the real node to run.
	CSIProvisioner, KubeRBACProxy string
	// KwokCRDs, OLMCRDs and OpenShiftCRDs are directories of CRD manifests.
	KwokCRDs, OLMCRDs, OpenShiftCRDs string
}

// toolNames maps hack/tools.sh names to the fields they fill.
func (t *Tools) toolNames() map[string]*string {
	return map[string]*string{
		"etcd": &t.Etcd, "kube-apiserver": &t.APIServer, "kube-controller-manager": &t.ControllerManager,
		"kube-scheduler": &t.Scheduler, "kwok": &t.Kwok, "olm": &t.OLM, "catalog": &t.Catalog, "opm": &t.Opm,
		"kwok-crds": &t.KwokCRDs, "olm-crds": &t.OLMCRDs, "openshift-crds": &t.OpenShiftCRDs,
		"registry": &t.Registry, "kubelet": &t.Kubelet, "kube-proxy": &t.KubeProxy, "pause": &t.Pause,
		"coredns": &t.CoreDNS, "grpc_health_probe": &t.GRPCHealthProbe,
		"csi-provisioner": &t.CSIProvisioner, "kube-rbac-proxy": &t.KubeRBACProxy,
	}
}

// FindTools asks the repository's hack/tools.sh for every tool, building what is missing. It
// looks for the repository from the working directory upwards.
func FindTools() (Tools, error) {
	root, err := repoRoot()
	if err != nil {
		return Tools{}, err
	}
	var t Tools
	fields := t.toolNames()
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
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

func repoRoot() (string, error) {
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

// check makes sure every tool a level, or a stack without a cluster, needs is present.
func (t Tools) check(level Level, noCluster bool) error {
	need := map[string]string{"etcd": t.Etcd, "kube-apiserver": t.APIServer}
	if noCluster {
		need, level = map[string]string{}, APIServer
	}
	if level >= Full {
		need["kube-controller-manager"], need["kube-scheduler"], need["kwok"], need["kwok-crds"] = t.ControllerManager, t.Scheduler, t.Kwok, t.KwokCRDs
	}
	if level >= OLM {
		need["olm"], need["catalog"], need["olm-crds"] = t.OLM, t.Catalog, t.OLMCRDs
	}
	var missing []string
	for name, path := range need {
		if path == "" {
			missing = append(missing, name)
		} else if _, err := os.Stat(path); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", name, err))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools for a %s stack: %s; `make tools` builds them", level, strings.Join(missing, ", "))
	}
	return nil
}
