package dev_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/csi-olm/csi-olm/testbed"
	"github.com/csi-olm/csi-olm/testbed/dev"
)

// TestUpDown runs the verbs against real processes: up records a cluster that outlives the
// command, refuses a second one, and down stops every process and forgets it.
func TestUpDown(t *testing.T) {
	home := t.TempDir()
	var out bytes.Buffer
	stop := &dev.Down{Home: home, Out: &out}
	// Whatever happens, no detached process outlives the test.
	t.Cleanup(func() { _ = stop.Run(context.Background()) })

	u := &dev.Up{Home: home, Level: "apiserver", Out: &out}
	if err := u.Run(context.Background()); err != nil {
		t.Fatalf("dev up: %v\n%s", err, out.String())
	}
	st, err := dev.ReadState(dev.StateFile(home))
	if err != nil || st == nil {
		t.Fatalf("no state recorded: %v", err)
	}
	if !strings.Contains(out.String(), "export KUBECONFIG="+st.Kubeconfig) {
		t.Errorf("dev up did not print the KUBECONFIG:\n%s", out.String())
	}
	if st.Registry == "" || !strings.Contains(out.String(), "image registry (plain HTTP): "+st.Registry) {
		t.Errorf("dev up did not print its registry %q:\n%s", st.Registry, out.String())
	}
	if resp, err := http.Get("http://" + st.Registry + "/v2/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the dev registry does not answer the registry API: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if _, err := os.Stat(st.Kubeconfig); err != nil {
		t.Errorf("kubeconfig: %v", err)
	}
	if pids := testbed.Survivors(st.Dir); len(pids) != len(st.Processes) || len(pids) == 0 {
		t.Errorf("%d processes running, %d recorded", len(pids), len(st.Processes))
	}
	if err := u.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already recorded") {
		t.Errorf("a second dev up: err = %v", err)
	}

	out.Reset()
	if err := stop.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return len(testbed.Survivors(st.Dir)) == 0, nil
	})
	if pids := testbed.Survivors(st.Dir); len(pids) > 0 {
		t.Errorf("processes survived dev down: %v", pids)
	}
	if st, _ := dev.ReadState(dev.StateFile(home)); st != nil {
		t.Error("dev down left the state file")
	}
	if err := stop.Run(context.Background()); err != nil || !strings.Contains(out.String(), "no dev cluster") {
		t.Errorf("a second dev down: err = %v, output %q", err, out.String())
	}
}

// TestUpRejectsBadFlags: bad flags are refused before any tool is asked for (a real node's take
// minutes to build), so the test points the tool cache at an empty directory and checks that it
// stays empty.
func TestUpRejectsBadFlags(t *testing.T) {
	tools := t.TempDir()
	t.Setenv("CSI_OLM_TOOLS_DIR", tools)
	t.Setenv("GOPROXY", "off")
	defer func() {
		if entries, _ := os.ReadDir(tools); len(entries) > 0 {
			t.Errorf("dev up asked hack/tools.sh for tools before refusing its flags: the cache holds %v", entries)
		}
	}()
	for _, tt := range []struct {
		up   *dev.Up
		want string
	}{
		{&dev.Up{Home: t.TempDir(), Level: "cluster"}, `unknown stack level "cluster"`},
		{&dev.Up{Home: t.TempDir(), Level: "apiserver", Catalogs: map[string]string{"x": "."}}, "catalogs need OLM"},
		{&dev.Up{Home: t.TempDir(), Level: "olm", Node: "virtual"}, `unknown node "virtual": use kwok or real`},
		{&dev.Up{Home: t.TempDir(), Level: "apiserver", Node: "real"}, "a real node needs a cluster of level full or olm, not apiserver"},
	} {
		tt.up.Out = &bytes.Buffer{}
		if err := tt.up.Run(context.Background()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("dev up %+v: %v, want an error with %q", tt.up, err, tt.want)
		}
	}
}
