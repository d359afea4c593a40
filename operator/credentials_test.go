package operator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestDriverFindsItsCredentials gives the AWS SDK's default credential chain (the SDK the driver
// is built with) exactly the environment and the files the operator's Deployment and DaemonSet
// give the driver containers, for each form of Secret the cloud-credential operator mints: a
// credentials file alone (STS and passthrough), the two keys alone, and both. The SDK must find
// the keys. (On the node, efs-utils asks with botocore, which reads the same variables and
// file.)
func TestDriverFindsItsCredentials(t *testing.T) {
	h, ctx := newManaged(t, testbed.APIServer)
	var d appsv1.Deployment
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efs.ControllerDeployment}, &d))
	var ds appsv1.DaemonSet
	must(t, h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efs.NodeDaemonSet}, &ds))
	for _, pod := range []struct {
		name, secret string
		spec         corev1.PodSpec
	}{
		{"controller", "aws-efs-cloud-credentials", d.Spec.Template.Spec},
		{"node", "node-aws-efs-cloud-credentials", ds.Spec.Template.Spec},
	} {
		t.Run(pod.name, func(t *testing.T) { findsCredentials(t, pod.spec, pod.secret) })
	}
}

func findsCredentials(t *testing.T, pod corev1.PodSpec, secret string) {
	driver := pod.Containers[0]
	const id, key = "AKIAEXAMPLEEXAMPLE12", "secret/EXAMPLE+key"
	file := "[default]\naws_access_key_id = " + id + "\naws_secret_access_key = " + key + "\n"
	for _, tc := range []struct {
		name string
		data map[string]string
	}{
		{"a credentials file alone", map[string]string{"credentials": file}},
		{"the two keys alone", map[string]string{"aws_access_key_id": id, "aws_secret_access_key": key}},
		{"both", map[string]string{"credentials": file, "aws_access_key_id": id, "aws_secret_access_key": key}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the driver's own settings: none of this process's AWS_* leaks in.
			for _, kv := range os.Environ() {
				if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AWS_") {
					t.Setenv(name, "")
					os.Unsetenv(name)
				}
			}
			t.Setenv("HOME", t.TempDir())
			// The chain's last link asks the EC2 instance metadata service, off this machine: a
			// test never sends traffic there, and the links before it decide here.
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			env, mounts := podView(t, pod, driver, secret, tc.data)
			for name, value := range env {
				for from, to := range mounts {
					value = strings.Replace(value, from, to, 1)
				}
				t.Setenv(name, value)
			}
			cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion("us-east-1"))
			must(t, err)
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatalf("the driver's SDK finds no credentials: %v", err)
			}
			if creds.AccessKeyID != id || creds.SecretAccessKey != key {
				t.Errorf("the driver's SDK finds key %q, want %q", creds.AccessKeyID, id)
			}
		})
	}
}

// podView is what the kubelet gives a container of pod when the credentials Secret holds data:
// its environment, with Secret references resolved (an optional key that is missing sets
// nothing), and its Secret volumes written to directories, by mount path.
func podView(t *testing.T, pod corev1.PodSpec, c corev1.Container, secret string, data map[string]string) (env, mounts map[string]string) {
	t.Helper()
	env, mounts = map[string]string{}, map[string]string{}
	for _, e := range c.Env {
		switch ref := e.ValueFrom; {
		case ref == nil:
			env[e.Name] = e.Value
		case ref.SecretKeyRef != nil && ref.SecretKeyRef.Name == secret:
			v, ok := data[ref.SecretKeyRef.Key]
			if !ok && (ref.SecretKeyRef.Optional == nil || !*ref.SecretKeyRef.Optional) {
				t.Fatalf("env %s needs key %s, which the Secret lacks: the pod would not start", e.Name, ref.SecretKeyRef.Key)
			}
			if ok {
				env[e.Name] = v
			}
		}
	}
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil || v.Secret.SecretName != secret {
				continue
			}
			dir := t.TempDir()
			for k, value := range data {
				must(t, os.WriteFile(filepath.Join(dir, k), []byte(value), 0o600))
			}
			mounts[m.MountPath] = dir
		}
	}
	if len(mounts) == 0 {
		t.Fatalf("container %s mounts no Secret %s", c.Name, secret)
	}
	return env, mounts
}
