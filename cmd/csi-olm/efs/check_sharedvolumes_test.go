package efs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/csi-olm/csi-olm/cmd/csi-olm/efs"
)

// run executes `csi-olm efs args...` as the binary would.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "csi-olm", SilenceUsage: true}
	root.AddCommand(efs.NewCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"efs"}, args...))
	err := root.Execute()
	return out.String(), err
}

func TestCheckSharedVolumesIsWired(t *testing.T) {
	out, err := run(t, "--help")
	if err != nil || !strings.Contains(out, "check-sharedvolumes") {
		t.Errorf("efs --help: %v\n%s", err, out)
	}
	out, err = run(t, "check-sharedvolumes", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"csi-olm efs check-sharedvolumes [flags]", "--kubeconfig", "crdUpgradeSafety.enforcement: None"} {
		if !strings.Contains(out, want) {
			t.Errorf("check-sharedvolumes --help lacks %q:\n%s", want, out)
		}
	}
	// It changes nothing: a --confirm or --dry-run would suggest it might.
	if strings.Contains(out, "--dry-run") || strings.Contains(out, "--confirm") {
		t.Errorf("check-sharedvolumes has a --dry-run:\n%s", out)
	}
	if _, err := run(t, "check-sharedvolumes", "ns/name"); err == nil || !strings.Contains(err.Error(), `unknown command "ns/name"`) {
		t.Errorf("with an argument: err = %v", err)
	}
}

func TestCheckSharedVolumesNamesABadKubeconfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := run(t, "check-sharedvolumes", "--kubeconfig", missing)
	if err == nil || !strings.Contains(err.Error(), "loading the cluster connection (pass --kubeconfig or set KUBECONFIG)") || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing kubeconfig: err = %v", err)
	}

	// A kubeconfig whose cluster nothing listens at: port 1 of loopback refuses at once.
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, "check-sharedvolumes", "--kubeconfig", unreachable)
	if err == nil || !strings.Contains(err.Error(), "discovering the API groups") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("an unreachable cluster: err = %v", err)
	}
}
