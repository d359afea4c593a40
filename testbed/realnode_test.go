package testbed

import (
	"strings"
	"testing"
)

func TestRealNodeSaysWhatTheMachineLacks(t *testing.T) {
	all := Tools{Kubelet: "/t/kubelet", KubeProxy: "/t/kube-proxy", Pause: "/t/pause", CoreDNS: "/t/coredns", GRPCHealthProbe: "/t/probe", Cpb: "/t/cpb"}
	everything := func(string) bool { return true }
	for _, tt := range []struct {
		name  string
		euid  int
		have  func(string) bool
		tools Tools
		want  []string
	}{
		{"a root machine with everything", 0, everything, all, nil},
		{"not root", 1000, everything, all, []string{"root: a real node creates a network namespace"}},
		{"no container runtime", 0, func(n string) bool { return n != "containerd" && n != "runc" }, all,
			[]string{"containerd (`make node-deps`", "runc (`make node-deps`"}},
		{"no CNI plugins", 0, func(n string) bool { return !strings.HasPrefix(n, cniBinDir) }, all,
			[]string{"CNI plugin bridge in /usr/lib/cni", "CNI plugin host-local", "CNI plugin loopback"}},
		{"no static busybox", 0, func(n string) bool { return n != busybox }, all, []string{busybox + ", the cp of OLM's util image"}},
		{"tools not built", 0, everything, Tools{}, []string{"kubelet (`make tools`", "kube-proxy", "pause", "coredns", "grpc_health_probe", "cpb"}},
		{"a tool's file gone", 0, func(n string) bool { return n != "/t/coredns" }, all, []string{"coredns (`make tools` builds it)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			missing := realNodeMissing(tt.euid, tt.have, tt.tools)
			if len(missing) != len(tt.want) {
				t.Fatalf("missing = %q, want %d entries like %q", missing, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(missing[i], w) {
					t.Errorf("missing[%d] = %q, want it to start with %q", i, missing[i], w)
				}
			}
		})
	}
}
