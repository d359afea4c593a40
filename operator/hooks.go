package operator

import (
	"fmt"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	configlisters "github.com/openshift/client-go/config/listers/config/v1"
	operatorlisters "github.com/openshift/client-go/operator/listers/operator/v1"
	"github.com/openshift/library-go/pkg/operator/csi/csidrivernodeservicecontroller"
	dc "github.com/openshift/library-go/pkg/operator/deploymentcontroller"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/csi-olm/csi-olm/internal/names/efs"
)

// The driver's flags the hooks set.
const (
	// tagsFlag: tags on every EFS object the driver creates (access points).
	tagsFlag = "--tags="
	// The node plugin's volume metrics, which the kubelet reports as the PVCs' usage.
	volMetricsOptInFlag     = "--vol-metrics-opt-in="
	volMetricsRefreshFlag   = "--vol-metrics-refresh-period="
	volMetricsRateLimitFlag = "--vol-metrics-fs-rate-limit="
)

// withClusterTagsHook tags what the driver creates with the cluster's ID, as OpenShift's CSI
// driver guide requires so that the installer can find and delete it with the cluster, and as
// OpenShift's own EFS operator does: kubernetes.io/cluster/<infrastructureName>:owned. The
// user-defined tags of the cluster (Infrastructure status.platformStatus.aws.resourceTags, set
// at install) come first, as OpenShift's operator adds them, so that access points carry the
// tags every other AWS resource of the cluster carries. The Infrastructure informer is among
// the controller's, so a change reaches the pods.
func withClusterTagsHook(infra configlisters.InfrastructureLister) dc.DeploymentHookFunc {
	return func(_ *operatorv1.OperatorSpec, d *appsv1.Deployment) error {
		cluster, err := infra.Get("cluster")
		if err != nil {
			return fmt.Errorf("reading the cluster ID for the driver's tags: %w", err)
		}
		tags, err := driverTags(cluster)
		if err != nil {
			return err
		}
		c := container(d.Spec.Template.Spec.Containers, driverContainer)
		if c == nil {
			return fmt.Errorf("deployment %s has no container %s to tag", d.Name, driverContainer)
		}
		setFlag(c, tagsFlag, tags)
		return nil
	}
}

// driverTags is the value of the driver's --tags: space-separated key:value pairs, a key or
// value holding a space or a colon in single quotes, as the driver parses them (OpenShift's
// validation of resourceTags admits both, and no quote).
func driverTags(cluster *configv1.Infrastructure) (string, error) {
	id := cluster.Status.InfrastructureName
	if id == "" {
		return "", fmt.Errorf("infrastructure cluster has no status.infrastructureName yet: the driver's tags need it")
	}
	owned := "kubernetes.io/cluster/" + id
	quote := func(s string) string {
		if strings.ContainsAny(s, " :") {
			return "'" + s + "'"
		}
		return s
	}
	var pairs []string
	if aws := cluster.Status.PlatformStatus; aws != nil && aws.AWS != nil {
		for _, t := range aws.AWS.ResourceTags {
			// The cluster's own tag is the operator's to set.
			if t.Key == "" || t.Value == "" || t.Key == owned {
				continue
			}
			pairs = append(pairs, quote(t.Key)+":"+quote(t.Value))
		}
	}
	return strings.Join(append(pairs, owned+":owned"), " "), nil
}

// withVolumeMetricsHook turns the ClusterCSIDriver's spec.driverConfig.aws.efsVolumeMetrics
// into the node plugin's flags, as OpenShift's EFS operator does. With RecursiveWalk the plugin
// walks each volume and the kubelet reports its usage (kubelet_volume_stats_*): EFS has no size
// limit, and this is what the admin watches instead. Off by default, because a walk over a large
// file system costs the node CPU and memory.
func withVolumeMetricsHook(drivers operatorlisters.ClusterCSIDriverLister) csidrivernodeservicecontroller.DaemonSetHookFunc {
	return func(_ *operatorv1.OperatorSpec, ds *appsv1.DaemonSet) error {
		cr, err := drivers.Get(efs.DriverName)
		if err != nil {
			return fmt.Errorf("reading ClusterCSIDriver %s for the volume metrics: %w", efs.DriverName, err)
		}
		c := container(ds.Spec.Template.Spec.Containers, nodeDriverContainer)
		if c == nil {
			return fmt.Errorf("daemonset %s has no container %s", ds.Name, nodeDriverContainer)
		}
		setFlag(c, volMetricsRefreshFlag, "")
		setFlag(c, volMetricsRateLimitFlag, "")
		var metrics *operatorv1.AWSEFSVolumeMetrics
		if aws := cr.Spec.DriverConfig.AWS; aws != nil {
			metrics = aws.EFSVolumeMetrics
		}
		if metrics == nil || metrics.State != operatorv1.AWSEFSVolumeMetricsRecursiveWalk {
			setFlag(c, volMetricsOptInFlag, "false")
			return nil
		}
		setFlag(c, volMetricsOptInFlag, "true")
		// Unset (0), the driver's defaults: every 240 minutes, 5 walks at once.
		if walk := metrics.RecursiveWalk; walk != nil {
			if walk.RefreshPeriodMinutes > 0 {
				setFlag(c, volMetricsRefreshFlag, strconv.Itoa(int(walk.RefreshPeriodMinutes)))
			}
			if walk.FSRateLimit > 0 {
				setFlag(c, volMetricsRateLimitFlag, strconv.Itoa(int(walk.FSRateLimit)))
			}
		}
		return nil
	}
}

// container is the named container, nil if there is none.
func container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// setFlag leaves exactly one flag with the prefix, of that value; none when the value is empty.
func setFlag(c *corev1.Container, prefix, value string) {
	args := c.Args[:0:0]
	for _, a := range c.Args {
		if !strings.HasPrefix(a, prefix) {
			args = append(args, a)
		}
	}
	if value != "" {
		args = append(args, prefix+value)
	}
	c.Args = args
}

// fipsEnabledFile says whether the kernel runs in FIPS mode; the operator's pod shares the
// node's kernel, and OpenShift enables FIPS on every node of a cluster or on none.
const fipsEnabledFile = "/proc/sys/crypto/fips_enabled"

// fipsEnabled is the driver's FIPS_ENABLED: "true" when the kernel runs in FIPS mode, which
// makes efs-utils mount through stunnel with FIPS-approved ciphers only, as OpenShift's
// operator sets it. A kernel without the file is not in FIPS mode.
func fipsEnabled(read func(string) ([]byte, error)) string {
	content, err := read(fipsEnabledFile)
	if err == nil && strings.TrimSpace(string(content)) == "1" {
		return "true"
	}
	return "false"
}

// withFIPSDeploymentHook and withFIPSDaemonSetHook give the driver's containers FIPS_ENABLED.
func withFIPSDeploymentHook(value string) dc.DeploymentHookFunc {
	return func(_ *operatorv1.OperatorSpec, d *appsv1.Deployment) error {
		return setEnv(d.Spec.Template.Spec.Containers, driverContainer, "FIPS_ENABLED", value)
	}
}

func withFIPSDaemonSetHook(value string) csidrivernodeservicecontroller.DaemonSetHookFunc {
	return func(_ *operatorv1.OperatorSpec, ds *appsv1.DaemonSet) error {
		return setEnv(ds.Spec.Template.Spec.Containers, nodeDriverContainer, "FIPS_ENABLED", value)
	}
}

// setEnv leaves exactly one variable of the name, of that value, in the named container.
func setEnv(cs []corev1.Container, name, variable, value string) error {
	c := container(cs, name)
	if c == nil {
		return fmt.Errorf("no container %s to set %s in", name, variable)
	}
	env := c.Env[:0:0]
	for _, e := range c.Env {
		if e.Name != variable {
			env = append(env, e)
		}
	}
	c.Env = append(env, corev1.EnvVar{Name: variable, Value: value})
	return nil
}
