package operator

import (
	"encoding/json"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/openshift/library-go/pkg/operator/csi/csiconfigobservercontroller"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// observed builds an observedConfig at the paths library-go's config observer writes, so the
// test follows the library if those paths move.
func observed(t *testing.T, suites []any, minVersion *string) runtime.RawExtension {
	t.Helper()
	config := map[string]any{}
	if suites != nil {
		if err := unstructured.SetNestedSlice(config, suites, csiconfigobservercontroller.CipherSuitesPath()...); err != nil {
			t.Fatal(err)
		}
	}
	if minVersion != nil {
		if err := unstructured.SetNestedField(config, *minVersion, csiconfigobservercontroller.MinTLSVersionPath()...); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: raw}
}

func TestTLSProfileObserved(t *testing.T) {
	tls12, empty := "VersionTLS12", ""
	suites := []any{"TLS_AES_128_GCM_SHA256"}
	for _, tc := range []struct {
		name   string
		config func(*testing.T) runtime.RawExtension
		want   bool
	}{
		{"nothing observed yet", func(*testing.T) runtime.RawExtension { return runtime.RawExtension{} }, false},
		{"not JSON", func(*testing.T) runtime.RawExtension { return runtime.RawExtension{Raw: []byte("{")} }, false},
		{"cipher suites only", func(t *testing.T) runtime.RawExtension { return observed(t, suites, nil) }, false},
		{"minimum version only", func(t *testing.T) runtime.RawExtension { return observed(t, nil, &tls12) }, false},
		{"a profile", func(t *testing.T) runtime.RawExtension { return observed(t, suites, &tls12) }, true},
		{"a custom profile without a minimum version", func(t *testing.T) runtime.RawExtension { return observed(t, suites, &empty) }, true},
		{"cipher suites of the wrong type", func(*testing.T) runtime.RawExtension {
			config := map[string]any{}
			_ = unstructured.SetNestedField(config, "not a list", csiconfigobservercontroller.CipherSuitesPath()...)
			_ = unstructured.SetNestedField(config, tls12, csiconfigobservercontroller.MinTLSVersionPath()...)
			raw, _ := json.Marshal(config)
			return runtime.RawExtension{Raw: raw}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &operatorv1.OperatorSpec{ManagementState: operatorv1.Managed, ObservedConfig: tc.config(t)}
			if got := tlsProfileObserved(spec); got != tc.want {
				t.Errorf("tlsProfileObserved(%s) = %v, want %v", spec.ObservedConfig.Raw, got, tc.want)
			}
		})
	}
}
