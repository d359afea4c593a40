package testbed

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	openshiftoperatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ebsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver/v1alpha1"
	manilav1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/v1alpha1"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

// Scheme knows the Kubernetes, CRD, OLM, OpenShift, SharedVolume and OLM-era driver CR types the test bed's client
// works with.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, operatorsv1alpha1.AddToScheme, operatorsv1.AddToScheme,
		configv1.Install, openshiftoperatorv1.Install, sharedvolumev1alpha1.AddToScheme,
		ebsv1alpha1.AddToScheme, manilav1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// NodeName is the kwok node of a Full stack.
const NodeName = "kwok-node-0"

// OLM's namespaces as OpenShift names them (the global catalog namespace and the one whose
// OperatorGroup makes every namespace a target), so that what README.md tells an admin runs here
// as written.
const (
	OLMNamespace       = "openshift-marketplace"
	OperatorsNamespace = "openshift-operators"
	GlobalOperatorGrp  = "global-operators"
)

// startControllers runs the controller-manager and the scheduler and waits until both are
// healthy.
func (s *Stack) startControllers(ctx context.Context) error {
	ports, err := s.componentPorts(10257, 10259)
	if err != nil {
		return err
	}
	kcmPort, schedPort := ports[0], ports[1]
	kubeconfig := s.componentKubeconfig()
	kubeconfigFlags := []string{"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		// The default client limit (20 QPS) holds the PV binder to a few binds a second, so any
		// measurement of hundreds of volumes would measure the limit. Large production control
		// planes raise it; API Priority and Fairness protects the server instead.
		"--kube-api-qps=100", "--kube-api-burst=200"}
	kcm, err := s.startComponent("kube-controller-manager", nil, s.opts.Tools.ControllerManager, append(kubeconfigFlags,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(kcmPort),
		"--leader-elect=false",
		"--service-account-private-key-file="+filepath.Join(s.Dir, "sa.key"),
		"--root-ca-file="+filepath.Join(s.Dir, "apiserver-certs", "apiserver.crt"),
		"--use-service-account-credentials=false",
		"--v=1")...)
	if err != nil {
		return err
	}
	sched, err := s.startComponent("kube-scheduler", nil, s.opts.Tools.Scheduler, append(kubeconfigFlags,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(schedPort),
		"--leader-elect=false", "--v=1")...)
	if err != nil {
		return err
	}
	insecure := s.componentHTTP(&tls.Config{InsecureSkipVerify: true})
	for _, c := range []struct {
		p    *process
		port int
	}{{kcm, kcmPort}, {sched, schedPort}} {
		url := "https://127.0.0.1:" + strconv.Itoa(c.port) + "/healthz"
		if err := poll(ctx, c.p, c.p.Name+" /healthz", func(ctx context.Context) error { return httpOK(ctx, insecure, url, "") }); err != nil {
			return err
		}
	}
	return nil
}

// startKwok runs kwok and registers one node that kwok keeps Ready: pods get scheduled and
// "run", so Deployments become Available.
func (s *Stack) startKwok(ctx context.Context) error {
	kwokPort, err := freePort()
	if err != nil {
		return err
	}
	// kwok reads port-forward targets from its PortForward objects (ForwardPodPort).
	kwokCRDs, err := ReadCRDDir(s.opts.Tools.KwokCRDs)
	if err != nil {
		return err
	}
	if err := InstallCRDs(ctx, s.Client, kwokCRDs...); err != nil {
		return err
	}
	// kwok's lease must outlive the node monitor grace period, else the node flaps NotReady. The
	// node port makes kwok publish its server as the node's kubelet, so the API server sends
	// port-forwards there.
	kwok, err := s.start("kwok", nil, s.opts.Tools.Kwok,
		"--kubeconfig="+s.Kubeconfig, "--manage-all-nodes=true", "--node-lease-duration-seconds=40",
		"--server-address=127.0.0.1:"+strconv.Itoa(kwokPort), "--node-port="+strconv.Itoa(kwokPort),
		"--enable-crds=PortForward", "--node-ip=127.0.0.1", "--cidr=10.244.0.0/16")
	if err != nil {
		return err
	}
	if err := s.Client.Create(ctx, fakeNode()); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", NodeName, err)
	}
	return s.waitNodeReady(ctx, kwok, NodeName)
}

// waitNodeReady waits until a node reports Ready, or the process that runs it dies.
func (s *Stack) waitNodeReady(ctx context.Context, p *process, name string) error {
	return poll(ctx, p, "node "+name+" Ready", func(ctx context.Context) error {
		var node corev1.Node
		if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready", name)
	})
}

// fakeNode is a node that is both worker and control plane, so operators that prefer control
// plane nodes and DaemonSets that want workers all land on it.
func fakeNode() *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: NodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": "",
				"type": "kwok",
			},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// installOLMCRDs installs OLM's CRDs. Start does it before kube-controller-manager runs: its
// garbage collector then watches CSVs from its first sync, instead of discovering them up to
// 30 s later, and an operator Deployment owned by a deleted CSV is collected at once (a hand-over
// test waited minutes for one under load).
func (s *Stack) installOLMCRDs(ctx context.Context) error {
	crds, err := ReadCRDDir(s.opts.Tools.OLMCRDs)
	if err != nil {
		return err
	}
	return InstallCRDs(ctx, s.Client, crds...)
}

// startOLM creates OLM's namespaces and global OperatorGroup and runs its olm and catalog
// operators as local processes; installOLMCRDs ran before. Both operators hard-code :8080 for
// health and metrics; the test bed never reads it, and a second instance only logs the failed
// bind.
func (s *Stack) startOLM(ctx context.Context) error {
	for _, ns := range []string{OLMNamespace, OperatorsNamespace} {
		if err := s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: GlobalOperatorGrp, Namespace: OperatorsNamespace}}
	if err := s.Client.Create(ctx, og); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	kubeconfig := s.componentKubeconfig()
	env := []string{"KUBECONFIG=" + kubeconfig}
	// A short wake-up interval re-syncs every CSV every 30 s: on a loaded 2-core machine OLM was
	// seen to miss a CSV's deletion, which the default 5 min would leave its finalizer waiting for.
	olm, err := s.startComponent(OLMComponent, env, s.opts.Tools.OLM,
		"--namespace="+OLMNamespace, "--writeStatusName=", "--writePackageServerStatusName=", "--interval=30s")
	if err != nil {
		return err
	}
	// On a real node the catalog operator dials registry pods by Service name, which only the
	// cluster's DNS resolves, and unpacks the bundle images a published catalog names with Jobs
	// that run its opm and util images. Without a node nothing pulls an image: catalogs are
	// served by address, their bundles' objects embedded.
	startCatalog := s.start
	opmImage, utilImage := "testbed.invalid/opm", "testbed.invalid/util"
	if s.host != nil {
		startCatalog = s.startWithClusterDNS
		if opmImage, utilImage, err = s.pushUnpackImages(ctx); err != nil {
			return err
		}
	}
	catalog, err := startCatalog("catalog", env, s.opts.Tools.Catalog,
		"--kubeconfig="+kubeconfig, "--namespace="+OLMNamespace, "--writeStatusName=", "--interval="+CatalogResync.String(),
		"--configmapServerImage=testbed.invalid/configmap-server", "--opmImage="+opmImage, "--util-image="+utilImage)
	if err != nil {
		return err
	}
	// OLM is ready once the olm operator has resolved the global OperatorGroup's namespaces.
	if err := poll(ctx, olm, "OperatorGroup "+GlobalOperatorGrp+" status", func(ctx context.Context) error {
		var got operatorsv1.OperatorGroup
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(og), &got); err != nil {
			return err
		}
		if len(got.Status.Namespaces) == 0 {
			return fmt.Errorf("OperatorGroup has no status yet")
		}
		return nil
	}); err != nil {
		return err
	}
	if done, err := catalog.exited(); done {
		return fmt.Errorf("catalog operator exited (%v):\n%s", err, Tail(catalog.Log, 20))
	}
	return nil
}

// CatalogResync is the catalog operator's wake-up interval on the test bed. OLM resolves a
// namespace again when one of its inputs changes (a Subscription, an OperatorGroup, a
// CatalogSource) and at every such wake-up, and at no other time: a resolution that failed
// because the CSV an upgrade replaced was not deleted yet (ConstraintsNotSatisfiable, "exists and
// is not referenced by a subscription") is not retried when that CSV goes. On a cluster it is
// retried at the next wake-up, within 15 minutes (OLM's default); the test bed wakes it sooner,
// so that a test waiting for that retry waits for OLM's own retry, not for a deadline of its own.
const CatalogResync = time.Minute

// ReadCRDDir reads every CRD manifest in a directory.
func ReadCRDDir(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading CRDs: %w", err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, e := range entries {
		if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		crd, err := DecodeCRD(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// deploymentAvailable reports whether a Deployment has its Available condition.
func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
