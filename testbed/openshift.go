package testbed

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/openshift"
)

// OpenShiftOptions shape the OpenShift singletons a stack gets.
type OpenShiftOptions struct {
	// CredentialsMode of the CloudCredential singleton: "" (default, the cloud-credential
	// operator mints credentials) or Manual (no CredentialsRequest unless an STS role is given).
	CredentialsMode operatorv1.CloudCredentialsMode
	// SingleNode makes the control plane topology SingleReplica.
	SingleNode bool
	// Controllers runs, in the calling process until the stack stops, stand-ins for the service
	// CA and cloud-credential operators (openshiftcontrollers.go): the Secrets they write are
	// what the driver's pods mount on a real node.
	Controllers bool
	// Version, such as "4.11.0", is the OpenShift release the cluster runs: ClusterVersion version
	// says so, and on an OLM stack OLM judges the installed operators against it
	// (SetOpenShiftVersion). Empty leaves the cluster without a ClusterVersion.
	Version string
}

// OLMComponent is OLM's olm operator, by the name Restart takes.
const OLMComponent = "olm"

// OLMClusterOperator is the ClusterOperator OLM reports on in an OpenShift cluster, among its
// conditions Upgradeable: whether installed operators let the cluster move to the next minor.
const OLMClusterOperator = "operator-lifecycle-manager"

// InstallOpenShift gives a plain API server what every OpenShift cluster has and what
// library-go's CSI controllers wait for (docs/architecture.md#what-an-openshift-cluster-provides): the OpenShift API CRDs, the singletons
// named cluster (Infrastructure on AWS, Proxy, APIServer, FeatureGate, CloudCredential) and the
// cloud-credential operator's namespace.
func (s *Stack) InstallOpenShift(ctx context.Context, opts OpenShiftOptions) error {
	crds, err := OpenShiftCRDs(s.opts.Tools.OpenShiftCRDs)
	if err != nil {
		return err
	}
	if err := InstallCRDs(ctx, s.Client, crds...); err != nil {
		return err
	}
	topology := configv1.HighlyAvailableTopologyMode
	if opts.SingleNode {
		topology = configv1.SingleReplicaTopologyMode
	}
	infra := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-cloud-credential-operator"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-config-managed"}},
		infra,
		&configv1.Proxy{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		&configv1.APIServer{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		&configv1.FeatureGate{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}},
		&operatorv1.CloudCredential{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
			Spec: operatorv1.CloudCredentialSpec{
				OperatorSpec:    operatorv1.OperatorSpec{ManagementState: operatorv1.Managed},
				CredentialsMode: opts.CredentialsMode,
			},
		},
	}
	for _, o := range objects {
		if err := s.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	// Read back: on a second install the Create above found the object and set nothing.
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(infra), infra); err != nil {
		return fmt.Errorf("reading the Infrastructure: %w", err)
	}
	infra.Status = configv1.InfrastructureStatus{
		InfrastructureName:     "testbed-" + NodeName,
		ControlPlaneTopology:   topology,
		InfrastructureTopology: topology,
		PlatformStatus: &configv1.PlatformStatus{
			Type: configv1.AWSPlatformType,
			AWS:  &configv1.AWSPlatformStatus{Region: "us-east-1"},
		},
	}
	if err := s.Client.Status().Update(ctx, infra); err != nil {
		return fmt.Errorf("setting the Infrastructure status: %w", err)
	}
	if opts.Version != "" {
		if err := s.SetOpenShiftVersion(ctx, opts.Version); err != nil {
			return err
		}
	}
	if opts.Controllers {
		return s.runOpenShiftControllers()
	}
	return nil
}

// SetOpenShiftVersion makes the cluster run an OpenShift release, as the cluster-version operator
// leaves it after an install or an upgrade: ClusterVersion version desires the release and its
// history has it completed. On an OLM stack, OLM's olm operator then restarts, as the upgrade
// rolls out its new release: OpenShift hands OLM the release in RELEASE_VERSION, which OLM reads
// once, at start, and compares each installed CSV's olm.maxOpenShiftVersion with in
// ClusterOperator operator-lifecycle-manager's Upgradeable condition. It returns once OLM
// reports on the new release. InstallOpenShift installed the config API before.
func (s *Stack) SetOpenShiftVersion(ctx context.Context, version string) error {
	if _, err := openshift.MinorOf(version); err != nil {
		return fmt.Errorf("setting the OpenShift version: %w", err)
	}
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"}}
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(cv), cv); apierrors.IsNotFound(err) {
		cv.Spec = configv1.ClusterVersionSpec{ClusterID: configv1.ClusterID(uuid.NewString())}
		if err := s.Client.Create(ctx, cv); err != nil {
			return fmt.Errorf("creating ClusterVersion version: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("reading ClusterVersion version: %w", err)
	}
	now := metav1.Now()
	for i := range cv.Status.History {
		if cv.Status.History[i].State == configv1.PartialUpdate {
			cv.Status.History[i].State = configv1.CompletedUpdate
		}
	}
	cv.Status.Desired = configv1.Release{Version: version}
	cv.Status.History = append([]configv1.UpdateHistory{{
		State: configv1.CompletedUpdate, Version: version, StartedTime: now, CompletionTime: &now,
	}}, cv.Status.History...)
	cv.Status.ObservedGeneration = cv.Generation
	cv.Status.VersionHash = "testbed-" + version
	if err := s.Client.Status().Update(ctx, cv); err != nil {
		return fmt.Errorf("setting ClusterVersion version to %s: %w", version, err)
	}
	if s.Level < OLM {
		return nil
	}
	if err := s.restart(ctx, OLMComponent, []string{"RELEASE_VERSION=" + version}, []string{"--writeStatusName=" + OLMClusterOperator}); err != nil {
		return err
	}
	olm, _, err := s.component(OLMComponent)
	if err != nil {
		return err
	}
	return poll(ctx, olm, "ClusterOperator "+OLMClusterOperator+" at "+version, func(ctx context.Context) error {
		co := &configv1.ClusterOperator{}
		if err := s.Client.Get(ctx, client.ObjectKey{Name: OLMClusterOperator}, co); err != nil {
			return err
		}
		for _, v := range co.Status.Versions {
			if v.Name == "operator" && v.Version == version {
				return nil
			}
		}
		return fmt.Errorf("ClusterOperator reports versions %v", co.Status.Versions)
	})
}
