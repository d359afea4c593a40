package csistandin

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"regexp"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// NoEFS starts the error every call that would need EFS gets: the test bed has no file system,
// and a test reads this text back from the kubelet's events.
const NoEFS = "the csi-olm stand-in driver has no EFS file system to reach"

// NameserversLog starts the driver's log line that lists the pod's DNS servers.
const NameserversLog = "DNS nameservers: "

// VolumeMetricsLog starts the driver's log line that gives its volume metrics flags.
const VolumeMetricsLog = "volume metrics: "

// HostMountsLog starts the driver's log line that lists what its pod gives it of the host:
// which of the paths SELinux-context mounts read are mount points, and its memory limit.
const HostMountsLog = "host mounts and limits: "

// hostMounts reports, for each path, whether it is a mount point in this container.
func hostMounts(paths ...string) map[string]bool {
	mounted := map[string]bool{}
	for _, p := range paths {
		mounted[p] = false
	}
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return mounted
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			if _, ok := mounted[f[4]]; ok {
				mounted[f[4]] = true
			}
		}
	}
	return mounted
}

// memoryLimit is the container's cgroup memory limit, as cgroup v1 or v2 shows it, with the
// host's /sys/fs mounted or not; "" when none is readable.
func memoryLimit() string {
	raw, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(raw), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var candidates []string
		switch {
		case parts[1] == "memory" || strings.Contains(parts[1], "memory,") || strings.HasSuffix(parts[1], ",memory"):
			candidates = []string{"/sys/fs/cgroup/memory" + parts[2] + "/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}
		case parts[0] == "0" && parts[1] == "":
			candidates = []string{"/sys/fs/cgroup" + parts[2] + "/memory.max", "/sys/fs/cgroup/memory.max"}
		}
		for _, c := range candidates {
			if v, err := os.ReadFile(c); err == nil {
				return strings.TrimSpace(string(v))
			}
		}
	}
	return ""
}

// nameservers lists the nameserver lines of a resolv.conf; none when it cannot be read.
func nameservers(path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var servers []string
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" {
			servers = append(servers, f[1])
		}
	}
	return servers
}

// volumeID is the shape of an EFS volume handle: fs-ID[:subpath][:fsap-ID] (upstream's parser).
var volumeID = regexp.MustCompile(`^fs-[0-9a-f]+(:[^:]*(:fsap-[0-9a-f]+)?)?$`)

// Driver plays the aws-efs-csi-driver: it serves the CSI Identity, Node and Controller services
// on one socket, as every upstream process does (there is no mode flag), and identifies itself
// as efs.csi.aws.com, so the kubelet registers it and calls it for EFS volumes.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedNodeServer
	csi.UnimplementedControllerServer

	Endpoint string
	// NodeID is what NodeGetInfo answers: the upstream driver, off AWS, takes the node from
	// CSI_NODE_NAME, which the DaemonSet sets from spec.nodeName.
	NodeID string
	logger *log.Logger

	// The upstream flags, taken so that the pods' arguments are checked; their values change
	// nothing here.
	version                                 bool
	configDir, legacyConfigDir, staticFiles string
	metricsOptIn, deleteRootDir, adaptive   bool
	metricsRefresh                          float64
	metricsRateLimit                        int
	tags                                    string
}

func (d *Driver) flags(fs *flag.FlagSet) {
	fs.StringVar(&d.Endpoint, "endpoint", "unix://tmp/csi.sock", "CSI endpoint")
	fs.BoolVar(&d.version, "version", false, "print the version and exit")
	fs.StringVar(&d.configDir, "efs-utils-config-dir-path", "/var/amazon/efs", "efs-utils configuration directory")
	fs.StringVar(&d.legacyConfigDir, "efs-utils-config-legacy-dir-path", "/etc/amazon/efs-legacy", "efs-utils legacy configuration directory")
	fs.StringVar(&d.staticFiles, "efs-utils-static-files-path", "/etc/amazon/efs-static-files/", "efs-utils static files directory")
	fs.BoolVar(&d.metricsOptIn, "vol-metrics-opt-in", false, "emit volume metrics")
	fs.Float64Var(&d.metricsRefresh, "vol-metrics-refresh-period", 240, "volume metrics refresh period in minutes")
	fs.IntVar(&d.metricsRateLimit, "vol-metrics-fs-rate-limit", 5, "volume metrics routines per file system")
	fs.BoolVar(&d.deleteRootDir, "delete-access-point-root-dir", false, "delete an access point's root directory with the volume")
	fs.BoolVar(&d.adaptive, "adaptive-retry-mode", true, "adaptive retries of EFS API calls")
	fs.StringVar(&d.tags, "tags", "", "space-separated key:value tags for the EFS objects the driver creates")
}

func (d *Driver) run(ctx context.Context, logger *log.Logger) error {
	if d.version {
		fmt.Fprintln(logger.Writer(), `{"driverVersion":"csi-olm-standin"}`)
		return nil
	}
	for _, tag := range strings.Fields(d.tags) {
		if k, _, ok := strings.Cut(tag, ":"); !ok || k == "" {
			return fmt.Errorf("--tags: %q is not key:value", tag)
		}
	}
	if d.NodeID = os.Getenv("CSI_NODE_NAME"); d.NodeID == "" {
		return fmt.Errorf("CSI_NODE_NAME is not set: off AWS the driver learns its node from it")
	}
	path, err := socketPath(d.Endpoint)
	if err != nil {
		return err
	}
	// The upstream driver resolves mount targets and the cluster's proxy through the pod's DNS
	// settings; logging them lets a test check the pod's dnsPolicy.
	logger.Printf("%s%v", NameserversLog, nameservers("/etc/resolv.conf"))
	logger.Printf("%s%v memory.limit=%s", HostMountsLog, hostMounts("/etc/selinux", "/sys/fs"), memoryLimit())
	logger.Printf("%sopt-in=%v refresh-period=%v fs-rate-limit=%d", VolumeMetricsLog, d.metricsOptIn, d.metricsRefresh, d.metricsRateLimit)
	d.logger = logger
	return serveGRPC(ctx, logger, path, func(s *grpc.Server) {
		csi.RegisterIdentityServer(s, d)
		csi.RegisterNodeServer(s, d)
		csi.RegisterControllerServer(s, d)
	})
}

// serveGRPC serves the registered services on the unix socket at path until ctx ends.
func serveGRPC(ctx context.Context, logger *log.Logger, path string, register func(*grpc.Server)) error {
	l, err := listenUnix(path)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	register(s)
	go func() {
		<-ctx.Done()
		s.GracefulStop()
	}()
	logger.Printf("serving on %s", path)
	if err := s.Serve(l); err != nil {
		return err
	}
	return ctx.Err()
}

func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: efs.DriverName, VendorVersion: "csi-olm-standin"}, nil
}

func (d *Driver) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (d *Driver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.NodeID}, nil
}

// NodeGetCapabilities offers volume stats only when volume metrics are on, as the upstream
// driver does: the kubelet then asks it for each volume's usage.
func (d *Driver) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	if !d.metricsOptIn {
		return &csi.NodeGetCapabilitiesResponse{}, nil
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_GET_VOLUME_STATS}},
	}}}, nil
}

// NodePublishVolume checks the request as the upstream driver does, logs it, and fails: the
// mount would need EFS. The kubelet reports the error in the pod's events.
func (d *Driver) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if !volumeID.MatchString(req.GetVolumeId()) {
		return nil, status.Errorf(codes.InvalidArgument, "volume ID %q is not fs-ID[:path][:fsap-ID]", req.GetVolumeId())
	}
	if req.GetTargetPath() == "" || req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "target path and volume capability are required")
	}
	d.logger.Printf("NodePublishVolume volume %s at %s", req.GetVolumeId(), req.GetTargetPath())
	return nil, status.Errorf(codes.Unavailable, "%s: NodePublishVolume of volume %s at %s", NoEFS, req.GetVolumeId(), req.GetTargetPath())
}

// NodeUnpublishVolume succeeds for a target that is not mounted, as the upstream driver does (it
// unmounts a mounted one first): the stand-in never mounts, so it only removes the target. Without
// it the kubelet could not tear a pod's volume down, and the pod would stay Terminating.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" || req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and target path are required")
	}
	if err := os.Remove(req.GetTargetPath()); err != nil && !os.IsNotExist(err) {
		return nil, status.Errorf(codes.Internal, "removing target %s: %v", req.GetTargetPath(), err)
	}
	d.logger.Printf("NodeUnpublishVolume volume %s at %s", req.GetVolumeId(), req.GetTargetPath())
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (d *Driver) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}},
	}}}, nil
}

func (d *Driver) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	d.logger.Printf("CreateVolume %s", req.GetName())
	return nil, status.Errorf(codes.Unavailable, "%s: CreateVolume %s", NoEFS, req.GetName())
}

func (d *Driver) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	d.logger.Printf("DeleteVolume %s", req.GetVolumeId())
	return nil, status.Errorf(codes.Unavailable, "%s: DeleteVolume %s", NoEFS, req.GetVolumeId())
}
