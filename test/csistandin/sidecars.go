package csistandin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// dialCSI connects to the driver's socket; the connection is made lazily, so the driver may
// start after its sidecars, as in a pod.
func dialCSI(address string) (*grpc.ClientConn, error) {
	path, err := socketPath(address)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// serveHTTP serves handler on addr until ctx ends.
func serveHTTP(ctx context.Context, logger *log.Logger, addr string, handler http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	logger.Printf("serving HTTP on %s", l.Addr())
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return ctx.Err()
}

// Registrar plays the node-driver-registrar: it asks the driver its name, serves the kubelet's
// plugin registration API on <plugin-registration-path>/<name>-reg.sock, and hands the kubelet
// the driver's socket as the host sees it (--kubelet-registration-path). The kubelet then calls
// the driver's NodeGetInfo and lists the driver in the node's CSINode.
type Registrar struct {
	registerapi.UnimplementedRegistrationServer

	CSIAddress, KubeletRegistrationPath, PluginRegistrationPath, HTTPEndpoint string
	Timeout                                                                   time.Duration
	driver                                                                    string
	logger                                                                    *log.Logger
	// stop ends the registrar with a cause: the kubelet's refusal.
	stop context.CancelCauseFunc
}

// HealthzAnsweredLog starts the registrar's log line for the first health check it passed.
const HealthzAnsweredLog = "answered a health check: "

func (r *Registrar) flags(fs *flag.FlagSet) {
	fs.StringVar(&r.CSIAddress, "csi-address", "/run/csi/socket", "the driver's socket in this container")
	fs.StringVar(&r.KubeletRegistrationPath, "kubelet-registration-path", "", "the driver's socket on the host")
	fs.StringVar(&r.PluginRegistrationPath, "plugin-registration-path", "/registration", "the kubelet's plugin registration directory in this container")
	fs.StringVar(&r.HTTPEndpoint, "http-endpoint", "", "address of the /healthz endpoint; none when empty")
	fs.DurationVar(&r.Timeout, "timeout", time.Second, "timeout of each call to the driver")
}

func (r *Registrar) run(ctx context.Context, logger *log.Logger) error {
	if r.KubeletRegistrationPath == "" {
		return fmt.Errorf("--kubelet-registration-path is required")
	}
	r.logger = logger
	conn, err := dialCSI(r.CSIAddress)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Wait for the driver, which starts next to the registrar, as upstream does.
	for {
		callCtx, cancel := context.WithTimeout(ctx, r.Timeout)
		info, err := csi.NewIdentityClient(conn).GetPluginInfo(callCtx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil {
			r.driver = info.GetName()
			break
		}
		logger.Printf("waiting for the driver at %s: %v", r.CSIAddress, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	socket := filepath.Join(r.PluginRegistrationPath, r.driver+"-reg.sock")
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.stop = cancel
	if r.HTTPEndpoint != "" {
		go func() {
			var answered sync.Once
			cancel(serveHTTP(ctx, logger, r.HTTPEndpoint, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if _, err := os.Stat(socket); err != nil {
					http.Error(w, err.Error(), http.StatusInternalServerError)
					return
				}
				answered.Do(func() { logger.Printf("%s%s from %s", HealthzAnsweredLog, req.URL.Path, req.UserAgent()) })
				fmt.Fprintln(w, "ok")
			})))
		}()
	}
	err = serveGRPC(ctx, logger, socket, func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, r) })
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

func (r *Registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	r.logger.Printf("the kubelet asks for the plugin's info: %s at %s", r.driver, r.KubeletRegistrationPath)
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.driver,
		Endpoint:          r.KubeletRegistrationPath,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

// NotifyRegistrationStatus ends the registrar when the kubelet refused the driver, as upstream
// does, so the refusal shows as a restarting container.
func (r *Registrar) NotifyRegistrationStatus(_ context.Context, status *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !status.PluginRegistered {
		r.stop(fmt.Errorf("the kubelet refused %s: %s", r.driver, status.Error))
		return &registerapi.RegistrationStatusResponse{}, nil
	}
	r.logger.Printf("the kubelet registered %s", r.driver)
	return &registerapi.RegistrationStatusResponse{}, nil
}

// Probe plays the livenessprobe sidecar: GET /healthz calls the driver's Probe and answers 200
// only when the driver says it is ready, so the driver container's livenessProbe checks the
// driver through its socket.
type Probe struct {
	CSIAddress, HTTPEndpoint string
	HealthPort               int
	ProbeTimeout             time.Duration
}

func (p *Probe) flags(fs *flag.FlagSet) {
	fs.StringVar(&p.CSIAddress, "csi-address", "/run/csi/socket", "the driver's socket in this container")
	fs.IntVar(&p.HealthPort, "health-port", 9808, "TCP port of /healthz on all addresses")
	fs.StringVar(&p.HTTPEndpoint, "http-endpoint", "", "address of /healthz; overrides --health-port")
	fs.DurationVar(&p.ProbeTimeout, "probe-timeout", time.Second, "timeout of the driver's Probe")
}

func (p *Probe) run(ctx context.Context, logger *log.Logger) error {
	conn, err := dialCSI(p.CSIAddress)
	if err != nil {
		return err
	}
	defer conn.Close()
	addr := p.HTTPEndpoint
	if addr == "" {
		addr = ":" + strconv.Itoa(p.HealthPort)
	}
	identity := csi.NewIdentityClient(conn)
	return serveHTTP(ctx, logger, addr, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/healthz" {
			http.NotFound(w, req)
			return
		}
		callCtx, cancel := context.WithTimeout(req.Context(), p.ProbeTimeout)
		defer cancel()
		resp, err := identity.Probe(callCtx, &csi.ProbeRequest{})
		switch {
		case err != nil:
			logger.Printf("probe failed: %v", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case resp.GetReady() != nil && !resp.GetReady().GetValue():
			http.Error(w, "the driver is not ready", http.StatusInternalServerError)
		default:
			fmt.Fprintln(w, "ok")
		}
	}))
}
