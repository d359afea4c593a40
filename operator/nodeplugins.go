package operator

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// The installers of an EFS node plugin the operator tells apart, so that the admin learns who
// installed the other plugin and how that installer takes it away.
const (
	installerCommunity = "the community aws-efs-operator"
	installerOpenShift = "OpenShift's AWS EFS CSI Driver Operator (openshift/csi-operator)"
	installerHelm      = "the upstream Helm chart aws-efs-csi-driver"
	installerKustomize = "the upstream kustomize manifests of kubernetes-sigs/aws-efs-csi-driver"
	installerUnknown   = "an installer csi-olm does not recognise"
)

// OpenShift's own EFS operator: its node plugin's name and the package OLM installs it from.
const (
	openShiftNodeDaemonSet        = "aws-efs-csi-driver-node"
	openShiftControllerDeployment = "aws-efs-csi-driver-controller"
	openShiftPackage              = "aws-efs-csi-driver-operator"
)

// Helm's marks on every object a release installs.
const (
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// nodePlugin is a node plugin of efs.csi.aws.com this operator did not deploy and cannot adopt.
type nodePlugin struct {
	// installer says who installed it, one of the installer constants.
	installer string
	// namespace and name are its DaemonSet's, empty when only the nodes' registrations show it.
	namespace, name string
	// nodes are, for a plugin no DaemonSet explains, the nodes that registered the driver.
	nodes []string
	// release is the Helm release, for installerHelm.
	release string
}

func (p nodePlugin) String() string {
	if p.name == "" {
		return fmt.Sprintf("a node plugin of %s registered on node %s by %s", efs.DriverName, strings.Join(p.nodes, ", "), p.installer)
	}
	return fmt.Sprintf("DaemonSet %s/%s of %s", p.namespace, p.name, p.installer)
}

// commands are what removes the plugin, in order, as its installer takes it away.
func (p nodePlugin) commands() []string {
	switch p.installer {
	case installerCommunity:
		return []string{"uninstall the community aws-efs-operator", fmt.Sprintf("oc delete daemonset %s -n %s --ignore-not-found", p.name, p.namespace)}
	case installerOpenShift:
		// Its operator re-creates what is deleted under it: it goes first. The Subscription
		// and CSV carry OLM's label of the package in their namespace.
		label := fmt.Sprintf("operators.coreos.com/%s.%s", openShiftPackage, p.namespace)
		return []string{
			"stop the pods that use EFS volumes (the plugin serves their mounts)",
			fmt.Sprintf("oc delete subscription,clusterserviceversion -n %s -l %s --ignore-not-found", p.namespace, label),
			fmt.Sprintf("oc delete daemonset %s -n %s --ignore-not-found", p.name, p.namespace),
			fmt.Sprintf("oc delete deployment %s -n %s --ignore-not-found", openShiftControllerDeployment, p.namespace),
			fmt.Sprintf("keep ClusterCSIDriver %s and CSIDriver %s: this operator serves them from then on", efs.CRName, efs.DriverName),
		}
	case installerHelm:
		return []string{
			"stop the pods that use EFS volumes (the plugin serves their mounts)",
			fmt.Sprintf("helm uninstall %s -n %s", p.release, p.namespace),
		}
	case installerKustomize:
		return []string{
			"stop the pods that use EFS volumes (the plugin serves their mounts)",
			fmt.Sprintf("oc delete daemonset %s -n %s --ignore-not-found", p.name, p.namespace),
			fmt.Sprintf("oc delete deployment efs-csi-controller -n %s --ignore-not-found", p.namespace),
		}
	}
	if p.name == "" {
		return []string{
			"find what runs the plugin on those nodes (a static pod, or a DaemonSet whose pods register the driver another way) and remove it",
			"or, if nothing runs it any more, restart the kubelet of those nodes: it forgets a plugin whose socket is gone",
		}
	}
	return []string{
		"stop the pods that use EFS volumes (the plugin serves their mounts)",
		fmt.Sprintf("remove it the way it was installed, or: oc delete daemonset %s -n %s --ignore-not-found", p.name, p.namespace),
	}
}

// foreignNodePlugins finds the node plugins of efs.csi.aws.com that this operator would run
// next to: every DaemonSet whose pods register the driver's socket, whatever its name,
// namespace or installer, but the one the operator adopts or deploys (efs-csi-node in its own
// namespace); and, when no such DaemonSet and none of the operator's runs, the nodes whose
// CSINode registers the driver anyway.
func foreignNodePlugins(namespace string, daemonSets []appsv1.DaemonSet, csiNodes []storagev1.CSINode) []nodePlugin {
	var found []nodePlugin
	ours := false
	for i := range daemonSets {
		ds := &daemonSets[i]
		if !registersEFS(&ds.Spec.Template.Spec) {
			continue
		}
		if ds.Namespace == namespace && ds.Name == efs.NodeDaemonSet {
			ours = true
			continue
		}
		found = append(found, classify(ds))
	}
	if len(found) > 0 || ours {
		return found
	}
	var nodes []string
	for _, n := range csiNodes {
		if slices.ContainsFunc(n.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == efs.DriverName }) {
			nodes = append(nodes, n.Name)
		}
	}
	if len(nodes) > 0 {
		slices.Sort(nodes)
		found = append(found, nodePlugin{installer: installerUnknown, nodes: nodes})
	}
	return found
}

// pluginDir is the directory of the driver's socket on the node, in every installer's manifests.
const pluginDir = "/plugins/" + efs.DriverName

// registersEFS says whether the pods register efs.csi.aws.com with the kubelet: they mount the
// driver's plugin directory from the node, or pass its socket to node-driver-registrar.
func registersEFS(pod *corev1.PodSpec) bool {
	for _, v := range pod.Volumes {
		if v.HostPath != nil && strings.Contains(strings.TrimSuffix(v.HostPath.Path, "/")+"/", pluginDir+"/") {
			return true
		}
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		for _, arg := range c.Args {
			if strings.HasPrefix(arg, "--kubelet-registration-path=") && strings.Contains(arg, pluginDir+"/") {
				return true
			}
		}
		for _, e := range c.Env {
			if strings.Contains(e.Value, pluginDir+"/") {
				return true
			}
		}
	}
	return false
}

// classify tells the installer of a node plugin's DaemonSet by the marks each leaves.
func classify(ds *appsv1.DaemonSet) nodePlugin {
	p := nodePlugin{installer: installerUnknown, namespace: ds.Namespace, name: ds.Name}
	switch {
	case ds.Labels[efs.CommunityOwnedLabel] != "" || (ds.Name == efs.NodeDaemonSet && ds.Labels["app.kubernetes.io/name"] == ""):
		p.installer = installerCommunity
	case ds.Name == openShiftNodeDaemonSet && ds.Spec.Selector != nil && ds.Spec.Selector.MatchLabels["app"] == openShiftNodeDaemonSet:
		p.installer = installerOpenShift
	case ds.Annotations[helmReleaseName] != "":
		p.installer, p.release = installerHelm, ds.Annotations[helmReleaseName]
		if ns := ds.Annotations[helmReleaseNamespace]; ns != "" {
			p.namespace = ns
		}
	case ds.Labels["app.kubernetes.io/name"] == "aws-efs-csi-driver":
		p.installer = installerKustomize
	}
	return p
}

// secondNodePluginMessage names each other node plugin, who installed it and the commands that
// remove it, in order.
func secondNodePluginMessage(plugins []nodePlugin) string {
	var each []string
	for _, p := range plugins {
		steps := p.commands()
		for i := range steps {
			steps[i] = fmt.Sprintf("%d. %s", i+1, steps[i])
		}
		each = append(each, fmt.Sprintf("%s: %s", p, strings.Join(steps, "; ")))
	}
	return fmt.Sprintf("another node plugin of %s runs, and two would serve one socket on every node, so the driver is not deployed until it is gone: %s",
		efs.DriverName, strings.Join(each, " | "))
}
