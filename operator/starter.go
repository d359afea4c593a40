package operator

import (
	"context"
	"fmt"
	"os"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	configinformers "github.com/openshift/client-go/config/informers/externalversions"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	operatorinformers "github.com/openshift/client-go/operator/informers/externalversions"
	"github.com/openshift/library-go/pkg/controller/controllercmd"
	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/csi/credentialsrequestcontroller"
	"github.com/openshift/library-go/pkg/operator/csi/csicontrollerset"
	"github.com/openshift/library-go/pkg/operator/csi/csidrivercontrollerservicecontroller"
	"github.com/openshift/library-go/pkg/operator/csi/csidrivernodeservicecontroller"
	"github.com/openshift/library-go/pkg/operator/resource/resourceread"
	"github.com/openshift/library-go/pkg/operator/v1helpers"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/names/olm"
	"github.com/csi-olm/csi-olm/operator/assets"
	"github.com/csi-olm/csi-olm/sharedvolume/controller"
)

const resync = 20 * time.Minute

// RunOperator runs the operator until ctx ends. Operands live in the operator's own namespace.
func RunOperator(ctx context.Context, cc *controllercmd.ControllerContext) error {
	ns := cc.OperatorNamespace
	if ns == "" {
		return fmt.Errorf("the operator's namespace is unknown: run it in a pod or pass --namespace")
	}
	// library-go names the controllers' finalizers on the CR after $OPERATOR_NAME, else after
	// os.Args[0], which may be a path: pin it so the names are valid and stable.
	if os.Getenv("OPERATOR_NAME") == "" {
		if err := os.Setenv("OPERATOR_NAME", efs.OperatorName); err != nil {
			return err
		}
	}
	config := rest.AddUserAgent(cc.KubeConfig, efs.OperatorName)
	// Started from its CSV, with no config file, the operator's client would get client-go's
	// default token bucket (5 requests a second, burst 10): applying the driver's 20 objects,
	// each read then written, took 5.7 s on the real node, against 0.55 s for the same operator
	// given a larger limit (BENCHMARKS.md). Each library-go controller has one worker, so the
	// requests in flight are few; the bucket only guards against a controller stuck in a loop,
	// and this one leaves an install unthrottled.
	config.QPS, config.Burst = 50, 100
	// Kubernetes' own types travel as protobuf, as library-go's builder offers them: the
	// volume informer sees every PV in the cluster and each of the binder's writes to it, and
	// as JSON each was encoded by the API server for this watch alone (its other watchers ask
	// for protobuf) and decoded here. The other clients serve custom resources, which only
	// JSON carries.
	protoConfig := rest.CopyConfig(config)
	protoConfig.ContentType = "application/vnd.kubernetes.protobuf"
	protoConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kubeClient, err := kubernetes.NewForConfig(protoConfig)
	if err != nil {
		return err
	}
	dynamicClient, err := dynamic.NewForConfig(config)
	if err != nil {
		return err
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return err
	}
	configClient, err := configclient.NewForConfig(config)
	if err != nil {
		return err
	}
	opClient, err := operatorclient.NewForConfig(config)
	if err != nil {
		return err
	}
	var clk clock.PassiveClock = clock.RealClock{}
	if cc.Clock != nil {
		clk = cc.Clock
	}
	operatorClient, dynamicInformers, err := newOperatorClient(clk, config)
	if err != nil {
		return err
	}

	// Informers are scoped to the operator's namespace (and the cluster singletons library-go
	// reads), so that the number of unrelated objects in the cluster does not matter.
	kubeInformers := v1helpers.NewKubeInformersForNamespaces(kubeClient, ns)
	nsInformers := kubeInformers.InformersFor(ns)
	configInformers := configinformers.NewSharedInformerFactory(configClient, resync)
	operatorInformers := operatorinformers.NewSharedInformerFactory(opClient, resync)
	secrets := nsInformers.Core().V1().Secrets()
	configMaps := nsInformers.Core().V1().ConfigMaps()
	recorder := cc.EventRecorder
	read := assets.For(ns)

	g := &gate{}
	gated := &gatedClient{OperatorClientWithFinalizers: operatorClient, gate: g}

	fips := fipsEnabled(os.ReadFile)
	controllerSet := csicontrollerset.NewCSIControllerSet(gated, recorder).
		WithManagementStateController(efs.OperatorName, true).
		WithLogLevelController()
	for _, g := range assets.StaticGroups {
		// library-go's static resource controller applies its manifests in every state but
		// Unmanaged; applying them only while Managed lets the uninstall controller remove them.
		controllerSet = controllerSet.WithConditionalStaticResourcesController("AWSEFSDriver"+g.Name+"StaticResourcesController", kubeClient, dynamicClient, kubeInformers, read,
			g.Files, gated.managed, never)
	}
	controllerSet = controllerSet.
		WithCredentialsRequestController("AWSEFSDriverCredentialsRequestController", ns, read, assets.CredentialsFile, dynamicClient, operatorInformers, stsHook).
		WithCSIConfigObserverController("AWSEFSDriverCSIConfigObserverController", configInformers).
		WithCSIDriverControllerService("AWSEFSDriverControllerServiceController", read, assets.ControllerFile, kubeClient, nsInformers, configInformers,
			[]factory.Informer{secrets.Informer(), configMaps.Informer(), configInformers.Config().V1().Infrastructures().Informer()},
			csidrivercontrollerservicecontroller.WithObservedProxyDeploymentHook(),
			withClusterTagsHook(configInformers.Config().V1().Infrastructures().Lister()),
			withFIPSDeploymentHook(fips),
			csidrivercontrollerservicecontroller.WithCABundleDeploymentHook(ns, trustedCAConfigMap, configMaps),
			// A rotated or newly minted credential restarts the controller pods.
			csidrivercontrollerservicecontroller.WithSecretHashAnnotationHook(ns, credentialsSecret, secrets),
			// kube-rbac-proxy reads its certificate only at start: a rotated one restarts the pods.
			csidrivercontrollerservicecontroller.WithSecretHashAnnotationHook(ns, metricsCertSecret, secrets),
			// One replica on single-node clusters, two otherwise.
			csidrivercontrollerservicecontroller.WithReplicasHook(configInformers),
		).
		WithCSIDriverNodeService("AWSEFSDriverNodeServiceController", read, assets.NodeFile, kubeClient, nsInformers,
			[]factory.Informer{configMaps.Informer(), secrets.Informer(), operatorInformers.Operator().V1().ClusterCSIDrivers().Informer()},
			csidrivernodeservicecontroller.WithObservedProxyDaemonSetHook(),
			csidrivernodeservicecontroller.WithCABundleDaemonSetHook(ns, trustedCAConfigMap, configMaps),
			withVolumeMetricsHook(operatorInformers.Operator().V1().ClusterCSIDrivers().Lister()),
			withFIPSDaemonSetHook(fips),
			// New or rotated node credentials restart the node plugin, which reads them at start.
			csidrivernodeservicecontroller.WithSecretHashAnnotationHook(ns, nodeCredentialsSecret, secrets),
		)

	csiDriverManifest, err := read("csidriver.yaml")
	if err != nil {
		return err
	}
	objects, err := operandObjects(ns)
	if err != nil {
		return err
	}
	fence := newRemovalFence(kubeClient, dynamicClient, metadataClient, ns)
	// The lifecycle reads every PersistentVolume of the cluster, each reduced to what tells an
	// EFS volume and its claim.
	volumeInformers := informers.NewSharedInformerFactoryWithOptions(kubeClient, resync, informers.WithTransform(efsVolumesOnly))
	volumes := volumeInformers.Core().V1().PersistentVolumes()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kubeClient.Discovery()))
	lc := &lifecycle{
		operatorClient: operatorClient, dynamic: dynamicClient, mapper: mapper, volumes: volumes.Lister(),
		objects: objects, gate: g, fence: fence, pods: &podWatch{kube: kubeClient},
	}
	nodeCredentials, err := read(assets.NodeCredentialsFile)
	if err != nil {
		return err
	}
	own := []factory.Controller{
		// csicontrollerset holds one CredentialsRequest controller, the controller's.
		credentialsrequestcontroller.NewCredentialsRequestController("AWSEFSDriverNodeCredentialsRequestController", ns, nodeCredentials,
			dynamicClient, gated, operatorInformers, recorder, stsHook),
		newAdoptionController(&adoptionController{
			namespace: ns, operatorClient: operatorClient, kube: kubeClient, dynamic: dynamicClient,
			daemonSets: nsInformers.Apps().V1().DaemonSets(), csiDriver: resourceread.ReadCSIDriverV1OrDie(csiDriverManifest), gate: g,
		}, recorder),
		newLifecycleController(lc, recorder, volumes.Informer()),
		newPresenceController(&presenceController{operatorClient: operatorClient, dynamic: dynamicClient, assets: read, namespace: ns}, recorder),
	}

	klog.Infof("starting the %s in namespace %s", efs.OperatorName, ns)
	kubeInformers.Start(ctx.Done())
	dynamicInformers.Start(ctx.Done())
	configInformers.Start(ctx.Done())
	operatorInformers.Start(ctx.Done())
	volumeInformers.Start(ctx.Done())
	controllerSet.Run(ctx, 1)
	for _, c := range own {
		go c.Run(ctx, 1)
	}
	// The SharedVolume controller serves app teams whether or not the driver is Managed: their
	// volumes are static, and a community install's SharedVolumes must keep working.
	svErr := make(chan error, 1)
	svOptions := controller.DefaultOptions
	svOptions.OperatorNamespace, svOptions.CSV = ns, os.Getenv(olm.OperatorConditionEnv)
	go func() { svErr <- controller.Run(ctx, config, efs.OperatorName, svOptions) }()
	select {
	case <-ctx.Done():
		return nil
	case err := <-svErr:
		if err != nil {
			return fmt.Errorf("SharedVolume controller: %w", err)
		}
		<-ctx.Done()
		return nil
	}
}

// stsHook turns a CredentialsRequest into an STS request when the operator is given an IAM
// role: ROLEARN, as OperatorHub sets it on clusters with short-lived credentials, or the
// variable the request's role-arns-vars annotation names (NODE_ROLEARN for the node plugin's).
func stsHook(_ *operatorv1.OperatorSpec, cr *unstructured.Unstructured) error {
	variable := cr.GetAnnotations()[credentialsrequestcontroller.EnvVarsAnnotationKey]
	if variable == "" {
		variable = "ROLEARN"
	}
	roleARN := os.Getenv(variable)
	if roleARN == "" {
		return nil
	}
	if err := unstructured.SetNestedField(cr.Object, roleARN, "spec", "providerSpec", "stsIAMRoleARN"); err != nil {
		return err
	}
	return unstructured.SetNestedField(cr.Object, "/var/run/secrets/openshift/serviceaccount/token", "spec", "cloudTokenPath")
}
