package kube

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
)

// TestRESTConfigRateLimit checks that a connection loaded from a kubeconfig gets the verbs' rate
// limit, not client-go's default of 5 requests a second, and that a Config given by the caller
// is used as it is.
func TestRESTConfigRateLimit(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const text = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`
	if err := os.WriteFile(kubeconfig, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	given := &rest.Config{Host: "https://127.0.0.1:1", QPS: 1, Burst: 2}
	for _, tc := range []struct {
		name       string
		opts       ClusterOptions
		qps, burst float32
	}{
		{"from --kubeconfig", ClusterOptions{Kubeconfig: kubeconfig}, clientQPS, clientBurst},
		{"a Config given", ClusterOptions{Kubeconfig: kubeconfig, Config: given}, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.opts.RESTConfig()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.QPS != tc.qps || float32(cfg.Burst) != tc.burst {
				t.Errorf("QPS %v, burst %d; want %v and %v", cfg.QPS, cfg.Burst, tc.qps, tc.burst)
			}
		})
	}
}
