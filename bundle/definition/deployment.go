package definition

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// OperatorPod describes the single-container operator Deployment that every operator here uses.
type OperatorPod struct {
	// Labels select the operator's pods; they are also set on the pod template.
	Labels map[string]string
	// PodLabels are further labels of the pod template only: the selector of a Deployment
	// cannot change, so what is added in a later release must not join it.
	PodLabels      map[string]string
	ServiceAccount string
	Container      string
	Image          string
	Command        []string
	Args           []string
	Env            []corev1.EnvVar
	// CPU and Memory are the container's resource requests.
	CPU, Memory string
	// PriorityClass is the pod's priority class; empty for none.
	PriorityClass string
	// ControlPlane prefers control-plane nodes and tolerates their taint, as OpenShift's own
	// storage operators do.
	ControlPlane bool
	Ports        []corev1.ContainerPort
	Volumes      []corev1.Volume
	VolumeMounts []corev1.VolumeMount
	// ReadOnlyRootFilesystem runs the container on a read-only root, with an emptyDir on /tmp
	// for what it writes at run time (library-go's temporary files).
	ReadOnlyRootFilesystem bool
}

// Deployment builds the operator's DeploymentSpec. The container runs with the restricted pod
// security profile: the operator itself needs no privileges, only the node DaemonSet it deploys does.
func (p OperatorPod) Deployment() appsv1.DeploymentSpec {
	spec := corev1.PodSpec{
		ServiceAccountName: p.ServiceAccount,
		PriorityClassName:  p.PriorityClass,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:         p.Container,
			Image:        p.Image,
			Command:      p.Command,
			Args:         p.Args,
			Env:          p.Env,
			Ports:        p.Ports,
			VolumeMounts: p.VolumeMounts,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(p.CPU),
				corev1.ResourceMemory: resource.MustParse(p.Memory),
			}},
			ImagePullPolicy:          corev1.PullIfNotPresent,
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
	spec.Volumes = p.Volumes
	if p.ReadOnlyRootFilesystem {
		c := &spec.Containers[0]
		c.SecurityContext.ReadOnlyRootFilesystem = ptr.To(true)
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if p.ControlPlane {
		spec.Tolerations = []corev1.Toleration{
			{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
			{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		}
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpExists,
				}}},
			}},
		}}
	}
	podLabels := map[string]string{}
	maps.Copy(podLabels, p.Labels)
	maps.Copy(podLabels, p.PodLabels)
	return appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: p.Labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
			Spec:       spec,
		},
	}
}

// FieldEnv is an environment variable read from the pod's own fields through the downward API.
func FieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}

// Rule is a shorthand for a PolicyRule; it keeps the long permission lists of the definitions readable.
func Rule(apiGroups, resources, verbs []string, resourceNames ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: apiGroups, Resources: resources, Verbs: verbs, ResourceNames: resourceNames}
}

// Verb lists for Rule.
var (
	// ReadOnly is get, list and watch.
	ReadOnly = []string{"get", "list", "watch"}
	// ReadWrite is every verb but deletecollection.
	ReadWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)
