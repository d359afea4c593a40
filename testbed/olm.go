package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/progress"
)

// ServeCatalog runs `opm serve` on a file-based catalog directory, on a free port, and returns
// the address once the registry answers gRPC health checks.
func (s *Stack) ServeCatalog(ctx context.Context, name, dir string) (string, error) {
	if s.opts.Tools.Opm == "" {
		return "", fmt.Errorf("no opm binary: `make tools` builds it")
	}
	// Processes run in the stack's directory: relative paths would point elsewhere.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := s.start("opm-"+name, nil, s.opts.Tools.Opm, "serve", dir,
		"-p", strconv.Itoa(port),
		"--cache-dir", filepath.Join(s.Dir, "opm-cache-"+name), "--cache-enforce-integrity=false",
		"--pprof-addr=", "-t", filepath.Join(s.Dir, "logs", "opm-"+name+".termination"))
	if err != nil {
		return "", err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	err = poll(ctx, p, "opm serve "+dir, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		if resp.Status != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("registry is %s", resp.Status)
		}
		return nil
	})
	return addr, err
}

// PushCatalogImage builds a catalog image of a file-based catalog directory, with the tools'
// opm and grpc_health_probe as every catalog image carries them, pushes it to the stack's
// registry as <registry>/csi-olm/<name>:testbed and returns that reference.
func (s *Stack) PushCatalogImage(ctx context.Context, name, dir string) (string, error) {
	if s.Registry == "" {
		return "", fmt.Errorf("catalog image %s: the stack has no registry", name)
	}
	opm, err := os.ReadFile(s.opts.Tools.Opm)
	if err != nil {
		return "", fmt.Errorf("catalog image %s: %w", name, err)
	}
	probe, err := os.ReadFile(s.opts.Tools.GRPCHealthProbe)
	if err != nil {
		return "", fmt.Errorf("catalog image %s: %w", name, err)
	}
	packed, err := images.NewOPM(opm, probe)
	if err != nil {
		return "", err
	}
	img, err := images.Catalog(os.DirFS(dir), packed)
	if err != nil {
		return "", fmt.Errorf("catalog image of %s: %w", dir, err)
	}
	ref := s.Registry + "/csi-olm/" + name + ":testbed"
	if _, err := s.RegistryClient().Push(ctx, ref, img); err != nil {
		return "", err
	}
	return ref, nil
}

// CreateCatalogSource points a grpc CatalogSource at a served catalog and waits until OLM's
// catalog operator reports it READY.
func (s *Stack) CreateCatalogSource(ctx context.Context, namespace, name, addr string) error {
	return s.createCatalogSource(ctx, namespace, name, operatorsv1alpha1.CatalogSourceSpec{Address: addr})
}

// CreateImageCatalogSource creates a CatalogSource for a catalog image, as OperatorHub's
// sources are: OLM runs the image as a registry pod under the restricted security context, and
// the source is READY once the catalog operator reaches that pod through its Service. It needs
// a real node.
func (s *Stack) CreateImageCatalogSource(ctx context.Context, namespace, name, image string) error {
	return s.createCatalogSource(ctx, namespace, name, operatorsv1alpha1.CatalogSourceSpec{
		Image:         image,
		GrpcPodConfig: &operatorsv1alpha1.GrpcPodConfig{SecurityContextConfig: operatorsv1alpha1.Restricted},
	})
}

// SetCatalogSourceImage points an image CatalogSource at another catalog image, as an admin
// does when the cluster moves to the next OpenShift minor and its sources become that minor's
// index, and waits until the registry pod OLM runs for it serves the new image.
func (s *Stack) SetCatalogSourceImage(ctx context.Context, namespace, name, image string) error {
	cs := &operatorsv1alpha1.CatalogSource{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cs); err != nil {
		return fmt.Errorf("reading CatalogSource %s/%s: %w", namespace, name, err)
	}
	patch := client.MergeFrom(cs.DeepCopy())
	cs.Spec.Image = image
	if err := s.Client.Patch(ctx, cs, patch); err != nil {
		return fmt.Errorf("pointing CatalogSource %s/%s at %s: %w", namespace, name, image, err)
	}
	return poll(ctx, nil, "CatalogSource "+namespace+"/"+name+" serving "+image, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := s.Client.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{"olm.catalogSource": name}); err != nil {
			return err
		}
		var serving []string
		ready := false
		for _, p := range pods.Items {
			serving = append(serving, p.Spec.Containers[0].Image)
			ready = ready || p.Spec.Containers[0].Image == image && PodReady(&p)
		}
		if !ready || len(pods.Items) != 1 {
			return fmt.Errorf("registry pods run %v", serving)
		}
		var got operatorsv1alpha1.CatalogSource
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(cs), &got); err != nil {
			return err
		}
		if st := got.Status.GRPCConnectionState; st == nil || st.LastObservedState != "READY" {
			return fmt.Errorf("connection state %+v", st)
		}
		return nil
	})
}

func (s *Stack) createCatalogSource(ctx context.Context, namespace, name string, spec operatorsv1alpha1.CatalogSourceSpec) error {
	spec.SourceType, spec.DisplayName, spec.Publisher = operatorsv1alpha1.SourceTypeGrpc, name, "csi-olm test bed"
	cs := &operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
	if err := s.Client.Create(ctx, cs); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CatalogSource %s/%s: %w", namespace, name, err)
	}
	return poll(ctx, nil, "CatalogSource "+namespace+"/"+name+" READY", func(ctx context.Context) error {
		var got operatorsv1alpha1.CatalogSource
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(cs), &got); err != nil {
			return err
		}
		if st := got.Status.GRPCConnectionState; st != nil && st.LastObservedState == "READY" {
			return nil
		}
		return fmt.Errorf("connection state %+v", got.Status.GRPCConnectionState)
	})
}

// WaitForSubscription waits until a Subscription satisfies cond. On timeout the error shows the
// Subscription's state and every condition, which usually says why OLM is stuck.
func WaitForSubscription(ctx context.Context, c client.Client, namespace, name, want string, cond func(*operatorsv1alpha1.Subscription) bool) (*operatorsv1alpha1.Subscription, error) {
	var sub operatorsv1alpha1.Subscription
	key := client.ObjectKey{Namespace: namespace, Name: name}
	var getErr error
	var seen progress.Reason
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		getErr = c.Get(ctx, key, &sub)
		seen.Revision(ctx, "Subscription "+namespace+"/"+name, sub.ResourceVersion, getErr)
		return getErr == nil && cond(&sub), nil
	})
	if err != nil {
		return &sub, fmt.Errorf("Subscription %s/%s did not reach %s: %w\n%s", namespace, name, want, progress.Cause(ctx), olm.DescribeSubscription(&sub, getErr))
	}
	return &sub, nil
}

// WaitForCSV waits until a CSV reaches a phase, reporting its last phase, reason and message.
func WaitForCSV(ctx context.Context, c client.Client, namespace, name string, phase operatorsv1alpha1.ClusterServiceVersionPhase) error {
	var csv operatorsv1alpha1.ClusterServiceVersion
	var getErr error
	var seen progress.Reason
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		getErr = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &csv)
		seen.Revision(ctx, "CSV "+namespace+"/"+name, csv.ResourceVersion, getErr)
		return getErr == nil && csv.Status.Phase == phase, nil
	})
	if err != nil {
		return fmt.Errorf("CSV %s/%s did not reach %s: %w (phase=%q reason=%q message=%q, get error: %v)",
			namespace, name, phase, progress.Cause(ctx), csv.Status.Phase, csv.Status.Reason, csv.Status.Message, getErr)
	}
	return nil
}

// WaitForDeploymentAvailable waits until a Deployment reports Available.
func WaitForDeploymentAvailable(ctx context.Context, c client.Client, namespace, name string) error {
	return poll(ctx, nil, "Deployment "+namespace+"/"+name+" Available", func(ctx context.Context) error {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		if !deploymentAvailable(&d) {
			return fmt.Errorf("status %+v", d.Status)
		}
		return nil
	})
}

// OPMImage and UtilImage are where the stack's OLM finds the images of its bundle-unpack Jobs,
// under the names OLM's own release uses.
const (
	OPMImage  = "quay.io/operator-framework/opm:testbed"
	UtilImage = "quay.io/operator-framework/olm:testbed"
)

// pushUnpackImages builds OLM's opm and util images from the tools' opm and cpb and the host's
// static busybox, pushes them and returns their references.
func (s *Stack) pushUnpackImages(ctx context.Context) (opmRef, utilRef string, err error) {
	read := func(paths ...string) ([][]byte, error) {
		var out [][]byte
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("OLM's unpack images: %w", err)
			}
			out = append(out, b)
		}
		return out, nil
	}
	bins, err := read(s.opts.Tools.Opm, s.opts.Tools.GRPCHealthProbe, busybox, s.opts.Tools.Cpb)
	if err != nil {
		return "", "", err
	}
	packed, err := images.NewOPM(bins[0], bins[1])
	if err != nil {
		return "", "", err
	}
	opmImg, err := images.OPMImage(packed)
	if err != nil {
		return "", "", err
	}
	utilImg, err := images.UtilImage(bins[2], bins[3])
	if err != nil {
		return "", "", err
	}
	c := s.RegistryClient()
	if _, err := c.Push(ctx, OPMImage, opmImg); err != nil {
		return "", "", err
	}
	if _, err := c.Push(ctx, UtilImage, utilImg); err != nil {
		return "", "", err
	}
	return OPMImage, UtilImage, nil
}

// PodReady says whether the kubelet reports the pod Ready.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
