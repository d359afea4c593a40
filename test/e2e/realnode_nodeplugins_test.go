package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// openShiftNodePlugin is the node plugin OpenShift's own EFS operator deploys, as
// openshift/csi-operator ships it (operator/testdata/installers names the commit), in namespace ns
// with the placeholders filled the way that operator fills them, from the images this operator's
// shipped CSV gives its pod: both drivers are the same upstream driver. The credentials init
// container, which needs only a POSIX shell's builtins without credentials to copy, runs in
// shellImage instead of OpenShift's tools image, which is not built here.
func openShiftNodePlugin(t *testing.T, operator *corev1.Pod, ns, shellImage string) *appsv1.DaemonSet {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "operator", "testdata", "installers", "openshift-csi-operator-node.yaml"))
	must(t, err)
	env := map[string]string{"NAMESPACE": ns, "LOG_LEVEL": "2"}
	for _, e := range operator.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	env["TOOLS_IMAGE"] = shellImage
	filled := regexp.MustCompile(`\$\{([A-Z_]+)\}`).ReplaceAllStringFunc(string(raw), func(m string) string {
		name := m[2 : len(m)-1]
		v, ok := env[name]
		if !ok {
			t.Fatalf("nothing fills %s of OpenShift's node plugin manifest", m)
		}
		return v
	})
	var ds appsv1.DaemonSet
	must(t, yaml.UnmarshalStrict([]byte(filled), &ds))
	// On AWS the driver learns its node from the instance metadata; off AWS, here, from
	// CSI_NODE_NAME, which this operator's DaemonSet and the upstream one set and OpenShift's
	// leaves out. The one addition to the shipped manifest.
	for i := range ds.Spec.Template.Spec.Containers {
		if c := &ds.Spec.Template.Spec.Containers[i]; c.Name == "csi-driver" {
			c.Env = append(c.Env, corev1.EnvVar{Name: "CSI_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
		}
	}
	return &ds
}

// openShiftsPluginRefused is the admin whose cluster runs OpenShift's own EFS operator's node
// plugin in this operator's namespace, on the real node, registered with the kubelet: with the
// ClusterCSIDriver Managed, the operator deploys nothing and names the installer and the commands,
// in order; the admin runs them as written, and the operator then deploys its driver.
func openShiftsPluginRefused(ctx context.Context, t *testing.T, s *testbed.Stack, operator *corev1.Pod, shellImage string, setState func(operatorv1.ManagementState)) {
	t.Helper()
	c, ns := s.Client, operator.Namespace
	other := openShiftNodePlugin(t, operator, ns, shellImage)
	// What OpenShift's operator creates next to its DaemonSet, as far as its pods need it; what
	// the refusal's commands do not delete goes at the end.
	leftovers := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other.Spec.Template.Spec.ServiceAccountName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-efs-csi-driver-node-metrics-serving-cert"}},
	}
	for _, o := range append(slices.Clone(leftovers), other) {
		must(t, c.Create(ctx, o))
	}
	defer func() {
		for _, o := range leftovers {
			must(t, client.IgnoreNotFound(c.Delete(ctx, o)))
			must(t, testutil.Eventually(ctx, "OpenShift's "+o.GetName()+" gone", func(ctx context.Context) error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
					return fmt.Errorf("still there: %v", err)
				}
				return nil
			}))
		}
	}()
	must(t, testutil.Eventually(ctx, "OpenShift's node plugin to register "+efs.DriverName+" on "+testbed.RealNodeName, func(ctx context.Context) error {
		var node storagev1.CSINode
		if err := c.Get(ctx, client.ObjectKey{Name: testbed.RealNodeName}, &node); err != nil {
			return err
		}
		if !slices.ContainsFunc(node.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == efs.DriverName }) {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(other.Spec.Selector.MatchLabels)); err != nil {
				return err
			}
			var why []string
			for i := range pods.Items {
				why = append(why, pods.Items[i].Name+": "+podProblem(&pods.Items[i]))
			}
			return fmt.Errorf("CSINode %s registers %v; pods %v", node.Name, node.Spec.Drivers, why)
		}
		return nil
	}))

	setState(operatorv1.Managed)
	var message string
	must(t, testutil.Eventually(ctx, "the operator to refuse a second node plugin", func(ctx context.Context) error {
		var cr operatorv1.ClusterCSIDriver
		if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &cr); err != nil {
			return err
		}
		for _, cond := range cr.Status.Conditions {
			if cond.Type == "AWSEFSDriverAdoptionDegraded" && cond.Status == operatorv1.ConditionTrue && cond.Reason == "SecondNodePlugin" {
				message = cond.Message
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", cr.Status.Conditions)
	}))
	t.Logf("the refusal: %s", message)
	for _, want := range []string{"DaemonSet " + ns + "/aws-efs-csi-driver-node of OpenShift's AWS EFS CSI Driver Operator", "1. stop the pods that use EFS volumes"} {
		if !strings.Contains(message, want) {
			t.Errorf("the refusal lacks %q", want)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efs.NodeDaemonSet}, &appsv1.DaemonSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("this operator's node DaemonSet exists next to OpenShift's: %v", err)
	}

	// No pod uses an EFS volume by now: the admin runs the message's commands, as written.
	kubectl := testutil.Tool(t, "kubectl")
	var ran int
	for _, step := range regexp.MustCompile(`\d+\. (oc [^;|]+)`).FindAllStringSubmatch(message, -1) {
		args := strings.Fields(strings.TrimPrefix(strings.TrimSpace(step[1]), "oc "))
		out, err := exec.CommandContext(ctx, kubectl, append(args, "--kubeconfig", s.Kubeconfig)...).CombinedOutput()
		t.Logf("%s\n%s", step[1], out)
		must(t, err)
		ran++
	}
	if ran != 3 {
		t.Errorf("ran %d commands of the refusal, want its 3 oc commands", ran)
	}
	must(t, testutil.Eventually(ctx, "the refusal to clear", func(ctx context.Context) error {
		var cr operatorv1.ClusterCSIDriver
		if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &cr); err != nil {
			return err
		}
		for _, cond := range cr.Status.Conditions {
			if cond.Type == "AWSEFSDriverAdoptionDegraded" && cond.Status == operatorv1.ConditionFalse {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", cr.Status.Conditions)
	}))
}
