package testbed

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The annotations OpenShift's service CA operator acts on.
const (
	ServingCertSecretAnnotation = "service.beta.openshift.io/serving-cert-secret-name"
	InjectCABundleAnnotation    = "service.beta.openshift.io/inject-cabundle"
	// ServiceCAKey is the ConfigMap key the service CA's certificate is injected under.
	ServiceCAKey = "service-ca.crt"
)

// TestbedCredentials marks the keys of every Secret the cloud-credential stand-in writes: there is
// no cloud, so no real key.
const TestbedCredentials = "csi-olm-testbed-no-cloud"

var credentialsRequestGVK = schema.GroupVersionKind{Group: "cloudcredential.openshift.io", Version: "v1", Kind: "CredentialsRequestList"}

// openShiftControllers stands in for two OpenShift operators whose output pods mount: the
// service CA operator (a serving certificate Secret for each annotated Service, the CA bundle
// in each annotated ConfigMap) and the cloud-credential operator in mint mode (the Secret each
// CredentialsRequest names). Without them the EFS controller pod waits forever for its metrics
// certificate and AWS credentials. It runs in the test's process and resyncs twice a second,
// which is plenty for a test bed and survives API server restarts without watch bookkeeping.
type openShiftControllers struct {
	c       client.Client
	ca      *certAuthority
	logf    func(string, ...any)
	lastErr string
}

// runOpenShiftControllers starts the stand-ins until the stack stops, once per stack: a second
// service CA would sign with another key.
func (s *Stack) runOpenShiftControllers() error {
	s.mu.Lock()
	running := s.controllersRunning
	s.controllersRunning = true
	s.mu.Unlock()
	if running {
		return nil
	}
	ca, err := newCertAuthority("csi-olm test bed service CA")
	if err != nil {
		return err
	}
	o := &openShiftControllers{c: s.Client, ca: ca, logf: s.opts.Logf}
	s.goBackground(o.sync, 500*time.Millisecond)
	return nil
}

func (o *openShiftControllers) sync(ctx context.Context) {
	err := errors.Join(o.servingCerts(ctx), o.caBundles(ctx), o.credentials(ctx))
	if err != nil && err.Error() != o.lastErr && ctx.Err() == nil {
		o.logf("OpenShift controller stand-ins: %v", err)
	}
	o.lastErr = fmt.Sprint(err)
}

// servingCerts issues, for each Service that asks, a certificate for its DNS names into the
// Secret it names, as the service CA operator does; a Secret that exists is left alone.
func (o *openShiftControllers) servingCerts(ctx context.Context) error {
	var services corev1.ServiceList
	if err := o.c.List(ctx, &services); err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	var errs []error
	for _, svc := range services.Items {
		name := svc.Annotations[ServingCertSecretAnnotation]
		if name == "" {
			continue
		}
		err := o.c.Get(ctx, client.ObjectKey{Namespace: svc.Namespace, Name: name}, &corev1.Secret{})
		if !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		dns := []string{svc.Name + "." + svc.Namespace + ".svc", svc.Name + "." + svc.Namespace + ".svc.cluster.local"}
		certPEM, keyPEM, err := o.ca.issue(&x509.Certificate{
			Subject:     pkix.Name{CommonName: dns[0]},
			DNSNames:    dns,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: svc.Namespace, Name: name,
				Annotations:     map[string]string{"service.beta.openshift.io/originating-service-name": svc.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID}},
			},
			Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}
		if err := o.c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("serving certificate %s/%s: %w", svc.Namespace, name, err))
		}
	}
	return errors.Join(errs...)
}

// caBundles injects the service CA into each ConfigMap that asks for it.
func (o *openShiftControllers) caBundles(ctx context.Context) error {
	var cms corev1.ConfigMapList
	if err := o.c.List(ctx, &cms); err != nil {
		return fmt.Errorf("listing ConfigMaps: %w", err)
	}
	var errs []error
	bundle := o.ca.pem()
	for _, cm := range cms.Items {
		if cm.Annotations[InjectCABundleAnnotation] != "true" || bytes.Equal([]byte(cm.Data[ServiceCAKey]), bundle) {
			continue
		}
		patch := client.MergeFrom(cm.DeepCopy())
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[ServiceCAKey] = string(bundle)
		if err := o.c.Patch(ctx, &cm, patch); err != nil {
			errs = append(errs, fmt.Errorf("CA bundle of %s/%s: %w", cm.Namespace, cm.Name, err))
		}
	}
	return errors.Join(errs...)
}

// credentials writes the Secret each CredentialsRequest names, with the keys the AWS SDK reads,
// and marks the request provisioned, as the cloud-credential operator does in mint mode.
func (o *openShiftControllers) credentials(ctx context.Context) error {
	var requests unstructured.UnstructuredList
	requests.SetGroupVersionKind(credentialsRequestGVK)
	if err := o.c.List(ctx, &requests); err != nil {
		return fmt.Errorf("listing CredentialsRequests: %w", err)
	}
	var errs []error
	for _, r := range requests.Items {
		ns, _, _ := unstructured.NestedString(r.Object, "spec", "secretRef", "namespace")
		name, _, _ := unstructured.NestedString(r.Object, "spec", "secretRef", "name")
		if ns == "" || name == "" {
			errs = append(errs, fmt.Errorf("CredentialsRequest %s/%s names no Secret", r.GetNamespace(), r.GetName()))
			continue
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			StringData: map[string]string{
				"aws_access_key_id":     TestbedCredentials,
				"aws_secret_access_key": TestbedCredentials,
				"credentials":           "[default]\naws_access_key_id = " + TestbedCredentials + "\naws_secret_access_key = " + TestbedCredentials + "\n",
			},
		}
		if err := o.c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("credentials %s/%s of CredentialsRequest %s: %w", ns, name, r.GetName(), err))
			continue
		}
		// library-go's CredentialsRequest controller reports Available only once this is set.
		if provisioned, _, _ := unstructured.NestedBool(r.Object, "status", "provisioned"); !provisioned {
			patch := client.MergeFrom(r.DeepCopy())
			if err := unstructured.SetNestedField(r.Object, true, "status", "provisioned"); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := o.c.Status().Patch(ctx, &r, patch); err != nil {
				errs = append(errs, fmt.Errorf("status of CredentialsRequest %s: %w", r.GetName(), err))
			}
		}
	}
	return errors.Join(errs...)
}
