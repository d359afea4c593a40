package testbed

import (
	"slices"
	"strings"
	"testing"
)

// TestNeededTools: a stack asks for what it runs and nothing more, so a test of the API server
// alone never waits for kubelet or OLM to be built, and every name is one hack/tools.sh knows.
func TestNeededTools(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      Options
		want, not []string
	}{
		{"registry alone", Options{Registry: true, NoCluster: true}, []string{"registry"}, []string{"etcd", "kube-apiserver"}},
		{"API server", Options{Level: APIServer}, []string{"etcd", "kube-apiserver", "openshift-crds"},
			[]string{"registry", "kube-controller-manager", "kwok", "olm", "kubelet", "opm"}},
		{"API server and registry", Options{Level: APIServer, Registry: true}, []string{"etcd", "kube-apiserver", "registry"}, []string{"kwok"}},
		{"full, kwok node", Options{Level: Full}, []string{"kube-controller-manager", "kube-scheduler", "kwok", "kwok-crds"},
			[]string{"olm", "olm-crds", "kubelet", "coredns"}},
		{"OLM, kwok node", Options{Level: OLM}, []string{"olm", "catalog", "olm-crds", "opm", "grpc_health_probe", "kwok"}, []string{"kubelet"}},
		{"OLM, real node", Options{Level: OLM, RealNode: true}, []string{"olm", "registry", "kubelet", "kube-proxy", "pause", "coredns", "grpc_health_probe"},
			[]string{"kwok", "kwok-crds"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := NeededTools(tt.opts)
			for _, name := range tt.want {
				if !slices.Contains(got, name) {
					t.Errorf("NeededTools = %v, lacks %s", got, name)
				}
			}
			for _, name := range tt.not {
				if slices.Contains(got, name) {
					t.Errorf("NeededTools = %v, asks for %s, which the stack does not run", got, name)
				}
			}
			for _, name := range got {
				if !slices.Contains(AllTools(), name) {
					t.Errorf("NeededTools names %q, which is no test bed tool", name)
				}
			}
		})
	}
}

// TestCheckNamesWhatIsMissing: a stack refuses to start without a tool it runs, naming it, and
// leaves a real node's own tools to the host check, which lists them with the rest.
func TestCheckNamesWhatIsMissing(t *testing.T) {
	err := Tools{Etcd: "/nonexistent/etcd"}.check(Options{Level: Full})
	if err == nil {
		t.Fatal("a full stack without its tools passed the check")
	}
	for _, name := range []string{"etcd (", "kube-apiserver", "kube-controller-manager", "kwok"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the check's error does not name %s: %v", name, err)
		}
	}
	if err := (Tools{}).check(Options{Level: Full, RealNode: true}); err != nil && strings.Contains(err.Error(), "kubelet") {
		t.Errorf("the check names a real node's tool, which checkRealNodeHost reports: %v", err)
	}
}
