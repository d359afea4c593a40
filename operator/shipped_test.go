package operator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

const podName = "aws-efs-csi-driver-operator-7d9f8-x2x4q"

// shippedCommand is the operator's container as the newest CSV ships it: its args, and its
// environment with the downward-API fields filled in as the kubelet would for a pod in ns.
func shippedCommand(t *testing.T) (args []string, env []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.FromSlash(headCSV))
	must(t, err)
	var csv v1alpha1.ClusterServiceVersion
	must(t, yaml.Unmarshal(raw, &csv))
	deployments := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deployments) != 1 || len(deployments[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the CSV has %d deployments; this test runs the only container of the only one", len(deployments))
	}
	c := deployments[0].Spec.Template.Spec.Containers[0]
	if len(c.Command) > 0 {
		t.Fatalf("the CSV overrides the image's entrypoint with %q; run that instead of the binary", c.Command)
	}
	for _, e := range c.Env {
		value, err := envValue(e)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, e.Name+"="+value)
	}
	return c.Args, env
}

func envValue(e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	if f := e.ValueFrom.FieldRef; f != nil {
		switch f.FieldPath {
		case "metadata.name":
			return podName, nil
		case "metadata.namespace":
			return ns, nil
		}
	}
	return "", fmt.Errorf("env %s: the test does not know how the kubelet fills %+v", e.Name, e.ValueFrom)
}

// writeKubeconfig writes what in-cluster configuration would give the pod: the API server, its
// CA and the ServiceAccount's token.
func writeKubeconfig(t *testing.T, config *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: config.Host, CertificateAuthorityData: config.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: config.BearerToken}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "sa", Namespace: ns}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// TestOperatorRunsAsItsCSVShipsIt runs the operator binary with the newest CSV's args and env,
// as its ServiceAccount with exactly the CSV's permissions. Only what a pod gets from its
// surroundings is added: the credentials in-cluster configuration would find, the namespace it
// would read from the token's directory, and a loopback port for the metrics server, which a pod
// binds in its own network namespace. The operator must start, stay up, never be refused, and
// work: put a driver in place for a ClusterCSIDriver.
func TestOperatorRunsAsItsCSVShipsIt(t *testing.T) {
	bin := buildOperator(t)
	h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubeconfig := writeKubeconfig(t, h.grantBundlePermissions(ctx))
	args, env := shippedCommand(t)

	p := h.startProcess(bin, append(args, "--kubeconfig", kubeconfig, "--namespace", ns, "--listen", testutil.FreeLoopbackAddr(t)), env)
	alive := func(what string) {
		t.Helper()
		select {
		case <-p.exited:
			t.Fatalf("%s: the operator exited (%v):\n%s", what, p.err, tail(p.output(), 30))
		default:
		}
	}

	// Both defects that shipped once (klog's -v not registered; the metrics server's
	// authentication ConfigMap not granted) ended the process within seconds of its start.
	select {
	case <-p.exited:
		t.Fatalf("the operator exited at start (%v):\n%s", p.err, tail(p.output(), 30))
	case <-time.After(10 * time.Second):
	}
	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	h.actAsCloudCredentialOperator(ctx)
	for _, obj := range operands() {
		if err := eventually(ctx, "operand "+obj.GetName(), h.exists(obj)); err != nil {
			alive("installing the driver")
			t.Fatalf("%v\n%s", err, tail(p.output(), 30))
		}
	}
	// What fails late fails within the first resyncs: the metrics server's authentication
	// ConfigMap, leader election renewals.
	time.Sleep(15 * time.Second)
	alive("15 s after the install")
	for _, line := range strings.Split(p.output(), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("the operator was refused something its CSV should grant: %s", line)
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
