package testbed

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
}

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
	if opts.Controllers {
		return s.runOpenShiftControllers()
	}
	return nil
}
