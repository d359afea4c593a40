package operator_test

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/operator"
)

func TestServingConfig(t *testing.T) {
	for _, tc := range []struct {
		name       string
		profile    *configv1.TLSSecurityProfile
		minVersion string
		cipher     string // one IANA suite the configuration must hold; empty: none at all
	}{
		{"no profile: Intermediate", nil, "VersionTLS12", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
		{"Modern", &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType}, "VersionTLS13", ""},
		{"Old", &configv1.TLSSecurityProfile{Type: configv1.TLSProfileOldType}, "VersionTLS10", "TLS_RSA_WITH_AES_128_CBC_SHA"},
		{"Custom", &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType, Custom: &configv1.CustomTLSProfile{TLSProfileSpec: configv1.TLSProfileSpec{
			MinTLSVersion: configv1.VersionTLS12, Ciphers: []string{"ECDHE-ECDSA-AES256-GCM-SHA384"},
		}}}, "VersionTLS12", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{"Custom without its spec: Intermediate", &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType}, "VersionTLS12", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := operator.ServingConfig(&configv1.APIServer{Spec: configv1.APIServerSpec{TLSSecurityProfile: tc.profile}})
			if c.Kind != "GenericOperatorConfig" || c.ServingInfo.MinTLSVersion != tc.minVersion {
				t.Errorf("%s with minTLSVersion %q, want GenericOperatorConfig with %q", c.Kind, c.ServingInfo.MinTLSVersion, tc.minVersion)
			}
			suites := strings.Join(c.ServingInfo.CipherSuites, " ")
			if tc.cipher != "" && !strings.Contains(suites, tc.cipher) {
				t.Errorf("cipher suites %s lack %s", suites, tc.cipher)
			}
		})
	}
}

// TestOperatorServesWithTheClusterTLSProfile runs the operator binary as its CSV ships it: its
// own HTTPS endpoint speaks only what the cluster's TLS profile allows, a new profile restarts
// it, and without the profile it does not start.
func TestOperatorServesWithTheClusterTLSProfile(t *testing.T) {
	h, ctx, start := newShipped(t)
	setProfile := func(p *configv1.TLSSecurityProfile) {
		t.Helper()
		var apiServer configv1.APIServer
		must(t, h.c.Get(ctx, client.ObjectKey{Name: "cluster"}, &apiServer))
		apiServer.Spec.TLSSecurityProfile = p
		must(t, h.c.Update(ctx, &apiServer))
	}
	// handshake reports whether the endpoint completes a TLS handshake capped at version max.
	handshake := func(addr string, max uint16) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true, MaxVersion: max}) //nolint:gosec // the protocol is under test, not the certificate
		if err == nil {
			conn.Close()
		}
		return err
	}

	setProfile(&configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType, Modern: &configv1.ModernTLSProfile{}})
	p, addr := start()
	must(t, eventually(ctx, "the operator serving TLS 1.3", func(context.Context) error { return handshake(addr, tls.VersionTLS13) }))
	if err := handshake(addr, tls.VersionTLS12); err == nil {
		t.Errorf("the operator completed a TLS 1.2 handshake under the Modern profile\n%s", tail(p.output(), 20))
	}

	setProfile(&configv1.TLSSecurityProfile{Type: configv1.TLSProfileIntermediateType, Intermediate: &configv1.IntermediateTLSProfile{}})
	select {
	case <-p.exited:
		if !strings.Contains(p.output(), "restarting to serve with it") {
			t.Errorf("the operator exited (%v) without saying why:\n%s", p.err, tail(p.output(), 20))
		}
	case <-time.After(time.Minute):
		t.Fatalf("the operator kept serving after the profile changed:\n%s", tail(p.output(), 20))
	}
	_, addr = start() // as the kubelet restarts the container
	must(t, eventually(ctx, "the operator serving TLS 1.2 under Intermediate", func(context.Context) error { return handshake(addr, tls.VersionTLS12) }))

	// Without the profile it must not serve at all, rather than serve with Go's defaults.
	must(t, h.c.Delete(ctx, &configv1.APIServer{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}))
	p, _ = start()
	select {
	case <-p.exited:
		const want = "the operator serves only with the cluster's TLS profile: reading the cluster's TLS profile from APIServer cluster:"
		if p.err == nil || !strings.Contains(p.output(), want) {
			t.Errorf("without APIServer cluster the operator exited with %v, saying:\n%s\nwant a failure saying %q", p.err, tail(p.output(), 10), want)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the operator started without the cluster's TLS profile:\n%s", tail(p.output(), 20))
	}
}
