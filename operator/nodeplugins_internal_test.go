package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// InstallerDaemonSet reads a node plugin DaemonSet as its installer's public repository ships
// it (testdata/installers, each file naming its repository and commit), in namespace.
func InstallerDaemonSet(t *testing.T, file, namespace string) appsv1.DaemonSet {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "installers", file))
	if err != nil {
		t.Fatal(err)
	}
	// OpenShift's operator fills its placeholders when it applies the manifest.
	raw = []byte(strings.ReplaceAll(string(raw), "${NAMESPACE}", namespace))
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(raw, &ds); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	ds.Namespace = namespace
	return ds
}

// TestForeignNodePlugins tells each installer's node plugin of efs.csi.aws.com from the shipped
// manifests, and leaves alone the one this operator adopts or deploys and other drivers' plugins.
func TestForeignNodePlugins(t *testing.T) {
	const ours = "openshift-cluster-csi-drivers"
	openShift := InstallerDaemonSet(t, "openshift-csi-operator-node.yaml", ours)
	kustomize := InstallerDaemonSet(t, "upstream-node-daemonset.yaml", "kube-system")
	// Helm marks every object of a release so: what `helm install aws-efs-csi-driver` of the
	// chart leaves on the DaemonSet the kustomize file was rendered from.
	helm := *kustomize.DeepCopy()
	metav1.SetMetaDataAnnotation(&helm.ObjectMeta, helmReleaseName, "aws-efs-csi-driver")
	metav1.SetMetaDataAnnotation(&helm.ObjectMeta, helmReleaseNamespace, "kube-system")
	metav1.SetMetaDataLabel(&helm.ObjectMeta, "app.kubernetes.io/managed-by", "Helm")
	unknown := *kustomize.DeepCopy()
	unknown.Namespace, unknown.Name, unknown.Labels = "storage", "efs-node", nil
	mine := *kustomize.DeepCopy()
	mine.Namespace, mine.Name, mine.Labels = ours, efs.NodeDaemonSet, nil
	otherDriver := *kustomize.DeepCopy()
	for i := range otherDriver.Spec.Template.Spec.Volumes {
		if hp := otherDriver.Spec.Template.Spec.Volumes[i].HostPath; hp != nil {
			hp.Path = strings.ReplaceAll(hp.Path, efs.DriverName, "ebs.csi.aws.com")
		}
	}
	for i := range otherDriver.Spec.Template.Spec.Containers {
		c := &otherDriver.Spec.Template.Spec.Containers[i]
		for j := range c.Env {
			c.Env[j].Value = strings.ReplaceAll(c.Env[j].Value, efs.DriverName, "ebs.csi.aws.com")
		}
	}
	registered := storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: efs.DriverName, NodeID: "i-0a"}}}}

	for _, tc := range []struct {
		name       string
		daemonSets []appsv1.DaemonSet
		csiNodes   []storagev1.CSINode
		// want lists, for each plugin found in order, what the message must say of it.
		want [][]string
	}{{
		name: "OpenShift's operator in this operator's namespace", daemonSets: []appsv1.DaemonSet{openShift},
		want: [][]string{{
			"DaemonSet openshift-cluster-csi-drivers/aws-efs-csi-driver-node of " + installerOpenShift,
			"1. stop the pods that use EFS volumes",
			"2. oc delete subscription,clusterserviceversion -n openshift-cluster-csi-drivers -l operators.coreos.com/aws-efs-csi-driver-operator.openshift-cluster-csi-drivers",
			"3. oc delete daemonset aws-efs-csi-driver-node -n openshift-cluster-csi-drivers",
			"4. oc delete deployment aws-efs-csi-driver-controller -n openshift-cluster-csi-drivers",
			"5. keep ClusterCSIDriver efs.csi.aws.com",
		}},
	}, {
		name: "the upstream Helm chart", daemonSets: []appsv1.DaemonSet{helm},
		want: [][]string{{"DaemonSet kube-system/efs-csi-node of " + installerHelm, "2. helm uninstall aws-efs-csi-driver -n kube-system"}},
	}, {
		name: "the upstream kustomize manifests", daemonSets: []appsv1.DaemonSet{kustomize},
		want: [][]string{{"DaemonSet kube-system/efs-csi-node of " + installerKustomize, "2. oc delete daemonset efs-csi-node -n kube-system", "3. oc delete deployment efs-csi-controller -n kube-system"}},
	}, {
		name: "an installer nobody knows, by the socket it registers", daemonSets: []appsv1.DaemonSet{unknown},
		want: [][]string{{"DaemonSet storage/efs-node of " + installerUnknown, "oc delete daemonset efs-node -n storage"}},
	}, {
		name: "two at once, as listed", daemonSets: []appsv1.DaemonSet{openShift, helm},
		want: [][]string{{installerOpenShift}, {installerHelm}},
	}, {
		name: "a plugin only the nodes' registrations show", csiNodes: []storagev1.CSINode{registered},
		want: [][]string{{"a node plugin of efs.csi.aws.com registered on node node-a by " + installerUnknown, "restart the kubelet of those nodes"}},
	}, {
		name: "the operator's own plugin, registered", daemonSets: []appsv1.DaemonSet{mine}, csiNodes: []storagev1.CSINode{registered},
	}, {
		name: "another driver's plugin", daemonSets: []appsv1.DaemonSet{otherDriver},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			found := foreignNodePlugins(ours, tc.daemonSets, tc.csiNodes)
			if len(found) != len(tc.want) {
				t.Fatalf("found %d plugins, want %d: %v", len(found), len(tc.want), found)
			}
			for i, p := range found {
				msg := secondNodePluginMessage([]nodePlugin{p})
				for _, w := range tc.want[i] {
					if !strings.Contains(msg, w) {
						t.Errorf("plugin %d: the message lacks %q:\n%s", i, w, msg)
					}
				}
			}
		})
	}
}
