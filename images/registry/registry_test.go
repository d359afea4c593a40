package registry_test

import (
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/images/registry"
)

func TestParseMirror(t *testing.T) {
	for _, tt := range []struct {
		in, wantErr string
		want        registry.Mirror
	}{
		{in: "quay.io=127.0.0.1:5000/quay.io", want: registry.Mirror{Source: "quay.io", Mirror: "127.0.0.1:5000/quay.io"}},
		{in: "quay.io/csi-olm=mirror.example:443/csi", want: registry.Mirror{Source: "quay.io/csi-olm", Mirror: "mirror.example:443/csi"}},
		{in: "quay.io", wantErr: "want SOURCE=MIRROR"},
		{in: "=127.0.0.1:5000", wantErr: `"" is not a registry or repository prefix`},
		{in: "quay.io=127.0.0.1:5000/x@sha256", wantErr: "is not a registry or repository prefix"},
		{in: "quay.io/=127.0.0.1:5000", wantErr: `"quay.io/" is not a registry or repository prefix`},
		{in: "Quay IO=127.0.0.1:5000", wantErr: "is not a registry or repository prefix"},
	} {
		got, err := registry.ParseMirror(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseMirror(%q) = %v, want an error containing %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ParseMirror(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestLocationUsesTheLongestMatchingMirror(t *testing.T) {
	c := registry.Client{Mirrors: []registry.Mirror{
		{Source: "quay.io", Mirror: "127.0.0.1:5000/quay.io"},
		{Source: "quay.io/csi-olm", Mirror: "127.0.0.1:5000/own"},
		{Source: "docker.io", Mirror: "127.0.0.1:5000/docker.io"},
	}}
	for _, tt := range []struct{ ref, want, wantErr string }{
		{ref: "quay.io/csi-olm/aws-efs-csi-driver:v4.11.0", want: "127.0.0.1:5000/own/aws-efs-csi-driver:v4.11.0"},
		{ref: "quay.io/csi-olmx/y:v1", want: "127.0.0.1:5000/quay.io/csi-olmx/y:v1"},
		{ref: "quay.io/brancz/kube-rbac-proxy@sha256:" + strings.Repeat("0", 64), want: "127.0.0.1:5000/quay.io/brancz/kube-rbac-proxy@sha256:" + strings.Repeat("0", 64)},
		// A Docker Hub short name is normalized before it is matched.
		{ref: "amazon/aws-efs-csi-driver:v1.0.0", want: "127.0.0.1:5000/docker.io/amazon/aws-efs-csi-driver:v1.0.0"},
		{ref: "registry.k8s.io/sig-storage/livenessprobe:v2.17.0", want: "registry.k8s.io/sig-storage/livenessprobe:v2.17.0"},
		{ref: "quay.io/csi-olm/x", wantErr: "has neither a tag nor a digest"},
		{ref: "Not An Image", wantErr: "not an image reference"},
	} {
		got, err := c.Location(tt.ref)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("Location(%q) = %v, want an error containing %q", tt.ref, err, tt.wantErr)
		case tt.wantErr == "" && err != nil:
			t.Errorf("Location(%q): %v", tt.ref, err)
		case tt.wantErr == "" && got.Name() != tt.want:
			t.Errorf("Location(%q) = %s, want %s", tt.ref, got.Name(), tt.want)
		}
	}
}
