package operator_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/test/csistandin"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// slowDriver is a CSI driver whose Probe and CreateVolume take as long as EFS's API can: its
// account-wide rate limits stretch calls to seconds. It records how the sidecars call it.
type slowDriver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	name                 string
	probeDelay, creation time.Duration

	mu                                      sync.Mutex
	running, maxRunning, created, cancelled int
}

func (d *slowDriver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: d.name, VendorVersion: "test"}, nil
}

func (d *slowDriver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{Type: &csi.PluginCapability_Service_{
		Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}}}}, nil
}

func (d *slowDriver) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	select {
	case <-time.After(d.probeDelay):
		return &csi.ProbeResponse{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *slowDriver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{Type: &csi.ControllerServiceCapability_Rpc{
		Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}}}}}, nil
}

func (d *slowDriver) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	d.mu.Lock()
	d.running++
	d.maxRunning = max(d.maxRunning, d.running)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.running--
		d.mu.Unlock()
	}()
	select {
	case <-time.After(d.creation):
	case <-ctx.Done():
		d.mu.Lock()
		d.cancelled++
		d.mu.Unlock()
		return nil, ctx.Err()
	}
	d.mu.Lock()
	d.created++
	d.mu.Unlock()
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId: "fs-0123abcd::fsap-" + req.Name[len(req.Name)-8:], CapacityBytes: req.GetCapacityRange().GetRequiredBytes(),
	}}, nil
}

func (d *slowDriver) calls() (maxRunning, created, cancelled int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.maxRunning, d.created, d.cancelled
}

// serve serves the driver on a unix socket until the test ends and returns the socket's path,
// short enough for the 108-byte limit of socket paths.
func (d *slowDriver) serve(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return sock
}

// without drops the given flags from args.
func without(args []string, flags ...string) []string {
	return slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		return slices.ContainsFunc(flags, func(f string) bool { return a == f || strings.HasPrefix(a, f+"=") })
	})
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("the pod has no container %s", name)
	}
	return spec.Containers[i]
}

// flagValue is the value of the last --name=value in args, as Go's flag package reads them.
func flagValue(args []string, name string) string {
	v := ""
	for _, a := range args {
		if s, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			v = s
		}
	}
	return v
}

// TestShippedSidecarArgsOutlastSlowEFSCalls runs the CSI sidecars with the very arguments the
// operator renders into the driver's Deployment and DaemonSet, against a driver as slow as EFS's
// API gets, and proves what each timing argument buys; the same run without the argument is the
// failure it prevents. The provisioner is the real external-provisioner, talking to the test
// bed's API server and kube-controller-manager; the liveness probe is the node's stand-in,
// which has the upstream probe's flags and defaults.
func TestShippedSidecarArgsOutlastSlowEFSCalls(t *testing.T) {
	h, ctx := newManaged(t, testbed.Full)
	var deployment appsv1.Deployment
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efs.ControllerDeployment}, &deployment))
	var daemonSet appsv1.DaemonSet
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efs.NodeDaemonSet}, &daemonSet))

	t.Run("liveness probe", func(t *testing.T) {
		for _, pod := range []struct {
			name string
			spec corev1.PodSpec
		}{{"controller", deployment.Spec.Template.Spec}, {"node", daemonSet.Spec.Template.Spec}} {
			probe := container(t, pod.spec, "liveness-probe")
			shipped := time.Second // upstream's default
			if v := flagValue(probe.Args, "probe-timeout"); v != "" {
				var err error
				if shipped, err = time.ParseDuration(v); err != nil {
					t.Fatalf("%s liveness-probe --probe-timeout: %v", pod.name, err)
				}
			}
			// The kubelet gives up on /healthz after timeoutSeconds: a longer CSI Probe would be
			// cut short there instead.
			probed := 0
			for _, c := range pod.spec.Containers {
				if p := c.LivenessProbe; p != nil && p.HTTPGet != nil && p.HTTPGet.Port == intstr.FromString("healthz") {
					probed++
					if time.Duration(p.TimeoutSeconds)*time.Second < shipped {
						t.Errorf("%s container %s: the kubelet waits %ds for /healthz, less than the probe's %s", pod.name, c.Name, p.TimeoutSeconds, shipped)
					}
				}
			}
			if probed != 1 {
				t.Errorf("%s: %d containers have the kubelet probe the liveness-probe's healthz port, want 1", pod.name, probed)
			}
			for _, tt := range []struct {
				name    string
				args    []string
				healthy bool
			}{
				{"as shipped", probe.Args, true},
				{"without --probe-timeout", without(probe.Args, "--probe-timeout"), false},
			} {
				t.Run(pod.name+" "+tt.name, func(t *testing.T) {
					// Between the upstream 1 s default and what the pods ship.
					sock := (&slowDriver{name: efs.DriverName, probeDelay: 2 * time.Second}).serve(t)
					healthz := testutil.FreeLoopbackAddr(t)
					runCtx, stop := context.WithCancel(ctx)
					done := make(chan error, 1)
					go func() {
						done <- csistandin.Main(runCtx, csistandin.ProbeName, append(slices.Clone(tt.args),
							"--csi-address="+sock, "--http-endpoint="+healthz), io.Discard)
					}()
					defer func() { stop(); <-done }()
					status, err := getHealthz(ctx, healthz)
					if err != nil {
						t.Fatal(err)
					}
					if healthy := status == http.StatusOK; healthy != tt.healthy {
						t.Errorf("/healthz of a driver whose Probe takes 2s: %d, want healthy=%v", status, tt.healthy)
					}
				})
			}
		}
	})

	t.Run("provisioner", func(t *testing.T) {
		provisioner := container(t, deployment.Spec.Template.Spec, "csi-provisioner")
		for i, tt := range []struct {
			name                     string
			args                     []string
			wantMaxRunning           int
			wantCreated, wantTimeout bool
		}{
			{"as shipped", provisioner.Args, 1, true, false},
			{"without --timeout and --worker-threads", without(provisioner.Args, "--timeout", "--worker-threads"), 2, false, true},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				// Each case has its own driver name, StorageClass and namespace, so the two
				// provisioners, each leading its own Lease, never see the other's claims.
				driver := &slowDriver{name: fmt.Sprintf("case%d.%s", i, efs.DriverName), creation: 11 * time.Second}
				sock := driver.serve(t)
				caseNS := fmt.Sprintf("provisioner-%d", i)
				class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: caseNS}, Provisioner: driver.name}
				must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: caseNS}}))
				must(t, h.c.Create(ctx, class))
				// What the pod's environment and volumes give: the socket's address, the API
				// server, and the pod's namespace for the Lease.
				p := h.startProcess(testutil.Tool(t, "csi-provisioner"), append(slices.Clone(tt.args), "--csi-address="+sock,
					"--http-endpoint="+testutil.FreeLoopbackAddr(t), "--kubeconfig="+h.stack.Kubeconfig, "--leader-election-namespace="+caseNS), nil)
				for _, name := range []string{"first", "second"} {
					must(t, h.c.Create(ctx, &corev1.PersistentVolumeClaim{
						ObjectMeta: metav1.ObjectMeta{Namespace: caseNS, Name: name},
						Spec: corev1.PersistentVolumeClaimSpec{
							StorageClassName: &class.Name,
							AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
							Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
						},
					}))
				}
				// The first CreateVolume ends after 11 s, or is cut at the default 10 s.
				err := eventually(ctx, "a CreateVolume to end", func(context.Context) error {
					if _, created, cancelled := driver.calls(); created+cancelled == 0 {
						return fmt.Errorf("none ended yet")
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%v\nprovisioner log:\n%s", err, p.output())
				}
				maxRunning, created, cancelled := driver.calls()
				if maxRunning != tt.wantMaxRunning || (created > 0) != tt.wantCreated || (cancelled > 0) != tt.wantTimeout {
					t.Errorf("CreateVolume calls: %d at once, %d created, %d cut by the timeout; want %d at once, created=%v, cut=%v",
						maxRunning, created, cancelled, tt.wantMaxRunning, tt.wantCreated, tt.wantTimeout)
				}
				if tt.wantCreated && created > 0 {
					must(t, eventually(ctx, "a PersistentVolume for the created volume", func(ctx context.Context) error {
						var pvs corev1.PersistentVolumeList
						if err := h.c.List(ctx, &pvs); err != nil {
							return err
						}
						for _, pv := range pvs.Items {
							if pv.Spec.StorageClassName == class.Name {
								return nil
							}
						}
						return fmt.Errorf("none of %d is of class %s", len(pvs.Items), class.Name)
					}))
				}
			})
		}
	})
}

// getHealthz asks /healthz once it listens, as the kubelet does, and returns its status.
func getHealthz(ctx context.Context, addr string) (int, error) {
	status := 0
	err := eventually(ctx, "/healthz to listen", func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		status = resp.StatusCode
		return nil
	})
	return status, err
}

// TestHostNetworkContainersListenOnLoopback: the node DaemonSet runs on the node's network, so an
// HTTP endpoint of its sidecars on every interface would be open to the node's neighbours. Each
// one the operator renders listens on 127.0.0.1, and the kubelet probes it there.
func TestHostNetworkContainersListenOnLoopback(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	var ds appsv1.DaemonSet
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efs.NodeDaemonSet}, &ds))
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork {
		t.Fatal("the node DaemonSet no longer runs on the node's network: this test has nothing to check")
	}
	endpoints := 0
	for _, c := range spec.Containers {
		if v := flagValue(c.Args, "health-port"); v != "" {
			t.Errorf("container %s listens on port %s of every interface (--health-port)", c.Name, v)
		}
		if v := flagValue(c.Args, "http-endpoint"); v != "" {
			endpoints++
			if !strings.HasPrefix(v, "127.0.0.1:") {
				t.Errorf("container %s listens on %s, not on the loopback", c.Name, v)
			}
		}
		for what, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Host != "127.0.0.1" {
				t.Errorf("container %s: the kubelet's %s probe asks %q, not 127.0.0.1", c.Name, what, p.HTTPGet.Host)
			}
		}
	}
	if endpoints == 0 {
		t.Error("no container of the node DaemonSet has an HTTP endpoint: this test has nothing to check")
	}
}

// TestSidecarsRunOnAReadOnlyRoot: every sidecar of the driver, as the operator applies it, runs
// with a read-only root filesystem, as in OpenShift's operator: they write only to the mounted
// socket directories. The driver's own containers are the exception docs/operator.md explains: what
// efs-utils writes at mount time is known only from the real driver image, which the tests do not
// run.
func TestSidecarsRunOnAReadOnlyRoot(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}},
	} {
		must(t, h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		sidecars := 0
		for _, c := range podSpecOf(obj).Containers {
			if c.Name == "csi-driver" || c.Name == "efs-plugin" {
				continue
			}
			sidecars++
			if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Errorf("%s: sidecar %s may write to its root filesystem", obj.GetName(), c.Name)
			}
		}
		if sidecars == 0 {
			t.Errorf("%s has no sidecar: this test checks nothing", obj.GetName())
		}
	}
}
