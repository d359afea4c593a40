package testbed_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestOpenShiftControllerStandIns: an annotated Service gets a serving certificate for its DNS
// names signed by the CA injected into an annotated ConfigMap, and a CredentialsRequest gets
// its Secret, on a real API server.
func TestOpenShiftControllerStandIns(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true}); err != nil {
		t.Fatal(err)
	}
	// A second install must not start a second CA.
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{Controllers: true}); err != nil {
		t.Fatal(err)
	}
	c, ns := s.Client, "apps"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metrics", Annotations: map[string]string{testbed.ServingCertSecretAnnotation: "metrics-tls"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}},
		},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca", Annotations: map[string]string{testbed.InjectCABundleAnnotation: "true"}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	request := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cloudcredential.openshift.io/v1", "kind": "CredentialsRequest",
		"metadata": map[string]any{"namespace": "openshift-cloud-credential-operator", "name": "app"},
		"spec":     map[string]any{"secretRef": map[string]any{"namespace": ns, "name": "app-aws"}},
	}}
	if err := c.Create(ctx, request); err != nil {
		t.Fatal(err)
	}

	var secret, creds corev1.Secret
	var cm corev1.ConfigMap
	if err := testutil.Eventually(ctx, "the serving certificate, CA bundle and credentials", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "metrics-tls"}, &secret); err != nil {
			return err
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app-aws"}, &creds); err != nil {
			return err
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ca"}, &cm); err != nil {
			return err
		}
		if cm.Data[testbed.ServiceCAKey] == "" {
			return fmt.Errorf("no %s in the ConfigMap yet", testbed.ServiceCAKey)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(request), request); err != nil {
			return err
		}
		if provisioned, _, _ := unstructured.NestedBool(request.Object, "status", "provisioned"); !provisioned {
			return fmt.Errorf("the CredentialsRequest is not marked provisioned")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("the serving certificate Secret holds no key pair: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(cm.Data[testbed.ServiceCAKey])) {
		t.Fatal("the injected CA bundle holds no certificate")
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "metrics.apps.svc", Roots: roots}); err != nil {
		t.Errorf("the serving certificate does not verify for metrics.apps.svc with the injected CA: %v", err)
	}
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("serving certificate Secret of type %s", secret.Type)
	}
	if !strings.Contains(string(creds.Data["credentials"]), "aws_access_key_id = "+testbed.TestbedCredentials) {
		t.Errorf("credentials Secret %q", creds.Data)
	}
}
