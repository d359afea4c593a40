package csistandin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/test/testutil"
)

func TestSocketPath(t *testing.T) {
	for _, tt := range []struct{ endpoint, want, err string }{
		{"unix:/csi/csi.sock", "/csi/csi.sock", ""},
		{"unix:///var/lib/csi/sockets/pluginproxy/csi.sock", "/var/lib/csi/sockets/pluginproxy/csi.sock", ""},
		{"unix://tmp/csi.sock", "tmp/csi.sock", ""},
		{"/csi/csi.sock", "/csi/csi.sock", ""},
		{"tcp://127.0.0.1:10000", "", "only unix sockets"},
		{"unix:", "", "names no socket"},
		{"", "", "no CSI endpoint"},
	} {
		got, err := socketPath(tt.endpoint)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("socketPath(%q) = %q, %v; want %q, error with %q", tt.endpoint, got, err, tt.want, tt.err)
		}
	}
}

// TestRefusesWhatUpstreamRefuses: a pod argument the upstream program would reject must stop
// the stand-in too, or the real node would prove nothing about the pods' arguments.
func TestRefusesWhatUpstreamRefuses(t *testing.T) {
	t.Setenv("CSI_NODE_NAME", "node-a")
	for _, tt := range []struct {
		name, program string
		args          []string
		env           string
		want          string
	}{
		{"unknown program", "efs-plugin", nil, "", `run as "efs-plugin"`},
		{"unknown flag", DriverName, []string{"--mode=node"}, "", "flag provided but not defined: -mode"},
		{"a positional argument", ProbeName, []string{"start"}, "", `unexpected arguments ["start"]`},
		{"bad tags", DriverName, []string{"--tags=kubernetes.io/cluster/x"}, "", `--tags: "kubernetes.io/cluster/x" is not key:value`},
		{"no node name", DriverName, []string{"--endpoint=unix:/x.sock"}, "unset", "CSI_NODE_NAME is not set"},
		{"no registration path", RegistrarName, []string{"--csi-address=/x.sock"}, "", "--kubelet-registration-path is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env == "unset" {
				t.Setenv("CSI_NODE_NAME", "")
			}
			err := Main(context.Background(), tt.program, tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Main(%s %q) = %v, want an error with %q", tt.program, tt.args, err, tt.want)
			}
		})
	}
}

// run starts a program in the background; the returned function stops it and returns its error
// and log.
func run(t *testing.T, program string, args ...string) (wait func() (error, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan error, 1)
	go func() { done <- Main(ctx, program, args, &log) }()
	var once sync.Once
	var err error
	wait = func() (error, string) {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err, log.String()
	}
	t.Cleanup(func() { wait() })
	return wait
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func dial(t *testing.T, path string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestANodePodsWiring runs the three programs as the node DaemonSet does, in one directory
// standing for the pod's volumes, and plays the kubelet: it finds the registration socket,
// follows the endpoint it is given to the driver, and publishes a volume.
func TestANodePodsWiring(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	driverSock, registration := filepath.Join(dir, "plugin", "csi.sock"), filepath.Join(dir, "registry")
	healthz := testutil.FreeLoopbackAddr(t)
	t.Setenv("CSI_NODE_NAME", "node-a")

	// The registrar starts first and must wait for the driver.
	stopRegistrar := run(t, RegistrarName, "--csi-address="+driverSock, "--kubelet-registration-path=/var/lib/kubelet/plugins/efs.csi.aws.com/csi.sock",
		"--plugin-registration-path="+registration, "--v=2")
	run(t, DriverName, "--endpoint=unix:"+driverSock, "--logtostderr", "--v=2", "--vol-metrics-opt-in=false",
		"--tags=kubernetes.io/cluster/infra-1:owned", "--delete-access-point-root-dir=true")
	run(t, ProbeName, "--csi-address="+driverSock, "--http-endpoint="+healthz)

	regSock := filepath.Join(registration, efs.DriverName+"-reg.sock")
	var info *registerapi.PluginInfo
	reg := registerapi.NewRegistrationClient(dial(t, regSock))
	if err := testutil.Eventually(ctx, "the registration socket answers", func(ctx context.Context) (err error) {
		info, err = reg.GetInfo(ctx, &registerapi.InfoRequest{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != efs.DriverName || info.Endpoint != "/var/lib/kubelet/plugins/efs.csi.aws.com/csi.sock" {
		t.Errorf("registration info %+v", info)
	}

	driver := dial(t, driverSock)
	nodeInfo, err := csi.NewNodeClient(driver).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || nodeInfo.NodeId != "node-a" {
		t.Errorf("NodeGetInfo = %v, %v; want node-a from CSI_NODE_NAME", nodeInfo, err)
	}
	mount := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}}
	for _, tt := range []struct {
		volume string
		code   codes.Code
		want   string
	}{
		{"fs-0123abcd::fsap-0123abcd", codes.Unavailable, NoEFS + ": NodePublishVolume of volume fs-0123abcd::fsap-0123abcd at /target"},
		{"fs-0123abcd", codes.Unavailable, NoEFS},
		{"vol-1", codes.InvalidArgument, `volume ID "vol-1" is not`},
	} {
		_, err := csi.NewNodeClient(driver).NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: tt.volume, TargetPath: "/target", VolumeCapability: mount})
		if s := status.Convert(err); s.Code() != tt.code || !strings.Contains(s.Message(), tt.want) {
			t.Errorf("NodePublishVolume(%s) = %v, want %s with %q", tt.volume, err, tt.code, tt.want)
		}
	}

	resp, err := http.Get("http://" + healthz + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz with the driver up: %s", resp.Status)
	}

	// A refusal by the kubelet ends the registrar with the kubelet's reason.
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: false, Error: "no such version"}); err != nil {
		t.Fatal(err)
	}
	if err, log := stopRegistrar(); err == nil || !strings.Contains(err.Error(), "the kubelet refused efs.csi.aws.com: no such version") {
		t.Errorf("the registrar after a refusal: %v\n%s", err, log)
	}
}

// TestProbeFailsWithoutTheDriver: the liveness probe must not report a dead driver healthy.
func TestProbeFailsWithoutTheDriver(t *testing.T) {
	healthz := testutil.FreeLoopbackAddr(t)
	run(t, ProbeName, "--csi-address="+filepath.Join(t.TempDir(), "none.sock"), "--http-endpoint="+healthz, "--probe-timeout=200ms")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testutil.Eventually(ctx, "/healthz answers 500", func(context.Context) error {
		resp, err := http.Get("http://" + healthz + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			return fmt.Errorf("/healthz: %s", resp.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
