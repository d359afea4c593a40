package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/test/csistandin"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// pushDriverImages pushes an image under every operand image reference the shipped operator's
// environment names, so the real node runs the driver's pods with the references they ship:
// csi-provisioner and kube-rbac-proxy built from their Go modules, and for the driver,
// node-driver-registrar and livenessprobe, whose modules the Go module proxy refuses, the
// project's stand-ins (test/csistandin) at the upstream images' entrypoints.
func pushDriverImages(tb testing.TB, s *testbed.Stack, operator corev1.Container) {
	tb.Helper()
	standIn, err := os.ReadFile(testutil.BuildStatic(tb, "github.com/csi-olm/csi-olm/test/e2e/csistandin", "amd64"))
	if err != nil {
		tb.Fatal(err)
	}
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	images := map[string]testbed.BinaryImage{
		efs.DriverImageEnv:        {Binary: standIn, Paths: []string{csistandin.Entrypoints[csistandin.DriverName]}, Root: true},
		efs.RegistrarImageEnv:     {Binary: standIn, Paths: []string{csistandin.Entrypoints[csistandin.RegistrarName]}, Root: true},
		efs.LivenessProbeImageEnv: {Binary: standIn, Paths: []string{csistandin.Entrypoints[csistandin.ProbeName]}, Root: true},
		// Where OpenShift's sidecar images install them; its kube-rbac-proxy image runs as a
		// non-root user.
		efs.ProvisionerImageEnv:   {Binary: read(s.Tools().CSIProvisioner), Paths: []string{"/usr/bin/csi-provisioner"}, Root: true},
		efs.KubeRBACProxyImageEnv: {Binary: read(s.Tools().KubeRBACProxy), Paths: []string{"/usr/bin/kube-rbac-proxy"}},
	}
	for _, e := range operator.Env {
		if strings.HasSuffix(e.Name, "_IMAGE") {
			if _, ok := images[e.Name]; !ok {
				tb.Fatalf("the CSV hands the operator %s=%s, which no image is pushed for", e.Name, e.Value)
			}
		}
	}
	for env, img := range images {
		ref := envOf(operator, env)
		if ref == "" {
			tb.Fatalf("the CSV's operator has no %s", env)
		}
		if err := s.PushBinaryImage(context.Background(), ref, img); err != nil {
			tb.Fatal(err)
		}
	}
}

// driverPods lists the pods of the driver's Deployment and DaemonSet.
func driverPods(ctx context.Context, c client.Client, ns string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		return !strings.HasPrefix(p.Name, efs.ControllerDeployment+"-") && !strings.HasPrefix(p.Name, efs.NodeDaemonSet+"-")
	}), nil
}

// waitDriverRolledOut waits until the driver's Deployment and DaemonSet in ns run the driver
// image of the shipped CSV, rolled out with no pod of an earlier template left: an upgraded
// operator rolls its release's images out after its own pod is Ready.
func waitDriverRolledOut(ctx context.Context, tb testing.TB, s *testbed.Stack, ns string, shipped operatorsv1alpha1.StrategyDeploymentSpec) {
	tb.Helper()
	image := envOf(shipped.Spec.Template.Spec.Containers[0], efs.DriverImageEnv)
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}},
	} {
		available := fixture.Available(s.Client, obj)
		must(tb, testutil.Eventually(ctx, fmt.Sprintf("%T %s rolled out with %s", obj, obj.GetName(), image), func(ctx context.Context) error {
			if err := available(ctx); err != nil {
				return err
			}
			var template corev1.PodTemplateSpec
			switch o := obj.(type) {
			case *appsv1.Deployment:
				template = o.Spec.Template
			case *appsv1.DaemonSet:
				template = o.Spec.Template
			}
			if !slices.ContainsFunc(template.Spec.Containers, func(c corev1.Container) bool { return c.Image == image }) {
				return fmt.Errorf("no container runs %s", image)
			}
			return nil
		}))
	}
}

// podProblem says why a pod is not Running and Ready with every container up, "" when it is.
func podProblem(p *corev1.Pod) string {
	if p.Status.Phase == corev1.PodRunning && testbed.PodReady(p) {
		return ""
	}
	var waiting []string
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			waiting = append(waiting, fmt.Sprintf("%s waiting (%s: %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			waiting = append(waiting, fmt.Sprintf("%s terminated (%s, exit %d: %s)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message))
		case !cs.Ready:
			waiting = append(waiting, cs.Name+" not ready")
		}
	}
	return fmt.Sprintf("%s: phase %s, %s", p.Name, p.Status.Phase, strings.Join(waiting, "; "))
}

// waitDriverRunning waits until the controller Deployment's and node DaemonSet's pods run on
// the real node with every container Ready, then checks what only running pods prove: the
// kubelet registered the driver in the node's CSINode (registrar, socket and host paths), and
// the operator reports the driver Available. It returns when the pods were first Running and
// Ready: the later checks wait for the kubelet's first liveness probes, which are no part of it.
func waitDriverRunning(ctx context.Context, tb testing.TB, s *testbed.Stack, ns string) time.Time {
	tb.Helper()
	c := s.Client
	err := testutil.Eventually(ctx, "the driver's pods Running and Ready on "+testbed.RealNodeName, func(ctx context.Context) error {
		pods, err := driverPods(ctx, c, ns)
		if err != nil {
			return err
		}
		var problems []string
		var controller, node int
		for i := range pods {
			p := &pods[i]
			if p.DeletionTimestamp != nil {
				problems = append(problems, p.Name+" terminating")
				continue
			}
			if why := podProblem(p); why != "" {
				problems = append(problems, why)
			}
			if strings.HasPrefix(p.Name, efs.NodeDaemonSet+"-") {
				node++
			} else {
				controller++
			}
		}
		if node != 1 || controller < 1 || len(problems) > 0 {
			return fmt.Errorf("%d controller and %d node pods; %s", controller, node, strings.Join(problems, "; "))
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("%v\n%s", err, driverLogs(ctx, s, ns, 20))
	}
	ready := time.Now()
	pods, err := driverPods(ctx, c, ns)
	if err != nil {
		tb.Fatal(err)
	}

	for _, p := range pods {
		if strings.HasPrefix(p.Name, efs.NodeDaemonSet+"-") {
			log := containerLog(ctx, s, &p, "efs-plugin", 0)
			// The node plugin resolves through the node's resolver, which answers an EFS name
			// with the mount target of the node's zone, never through the cluster DNS.
			if line := firstLineWith(log, csistandin.NameserversLog); !strings.Contains(line, testbed.NodeResolver) || strings.Contains(line, testbed.ClusterDNS) {
				tb.Errorf("the node plugin does not resolve through the node's resolver %s alone: %q", testbed.NodeResolver, line)
			}
			// Mounting with an SELinux context reads the host's policy and selinuxfs, and the
			// kubelet bounds the plugin's memory at 1 GiB.
			if line := firstLineWith(log, csistandin.HostMountsLog); !strings.Contains(line, "/etc/selinux:true") ||
				!strings.Contains(line, "/sys/fs:true") || !strings.Contains(line, "memory.limit=1073741824") {
				tb.Errorf("the node plugin lacks the host's /etc/selinux or /sys/fs, or its memory limit: %q", line)
			}
			// The kubelet probes the registrar's /healthz, which restarts it if its
			// registration socket goes; the stand-in logs the first probe it answers.
			if err := testutil.Eventually(ctx, "the kubelet to probe the registrar", func(ctx context.Context) error {
				if line := firstLineWith(containerLog(ctx, s, &p, "csi-driver-registrar", 0), csistandin.HealthzAnsweredLog); line == "" {
					return fmt.Errorf("no %q in the registrar's log", csistandin.HealthzAnsweredLog)
				}
				return nil
			}); err != nil {
				tb.Error(err)
			}
		}
	}

	// A flag that a sidecar ignores is a setting the operator believes it made.
	if line := firstLineWith(driverLogs(ctx, s, ns, 0), "Removed Flag"); line != "" {
		tb.Errorf("a driver container ignores a flag the operator passes: %s\n%s", line, driverLogs(ctx, s, ns, 30))
	}

	var csiNode storagev1.CSINode
	if err := testutil.Eventually(ctx, "CSINode "+testbed.RealNodeName+" lists "+efs.DriverName, func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKey{Name: testbed.RealNodeName}, &csiNode); err != nil {
			return err
		}
		for _, d := range csiNode.Spec.Drivers {
			if d.Name == efs.DriverName {
				if d.NodeID != testbed.RealNodeName {
					return fmt.Errorf("the driver is registered with node ID %q, not the node's name", d.NodeID)
				}
				return nil
			}
		}
		return fmt.Errorf("drivers %v", csiNode.Spec.Drivers)
	}); err != nil {
		tb.Fatalf("%v\n%s", err, driverLogs(ctx, s, ns, 20))
	}

	var cr operatorv1.ClusterCSIDriver
	if err := testutil.Eventually(ctx, "the ClusterCSIDriver Available", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &cr); err != nil {
			return err
		}
		var available []string
		for _, cond := range cr.Status.Conditions {
			if strings.HasSuffix(cond.Type, "Available") {
				if cond.Status != operatorv1.ConditionTrue {
					return fmt.Errorf("%s is %s: %s", cond.Type, cond.Status, cond.Message)
				}
				available = append(available, cond.Type)
			}
		}
		for _, want := range []string{"AWSEFSDriverControllerServiceControllerAvailable", "AWSEFSDriverNodeServiceControllerAvailable"} {
			if !slices.Contains(available, want) {
				return fmt.Errorf("no %s condition (Available: %v)", want, available)
			}
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return ready
}

// containerLog is one container's log, its last tail lines (all when 0), or why it cannot be
// read.
func containerLog(ctx context.Context, s *testbed.Stack, p *corev1.Pod, container string, tail int64) string {
	opts := &corev1.PodLogOptions{Container: container}
	if tail > 0 {
		opts.TailLines = ptr.To(tail)
	}
	raw, err := kubeClient(s).CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(raw)
}

// driverLogs are the driver pods' container logs, the last tail lines of each (all when 0).
func driverLogs(ctx context.Context, s *testbed.Stack, ns string, tail int64) string {
	pods, err := driverPods(ctx, s.Client, ns)
	if err != nil {
		return fmt.Sprintf("(no driver pods: %v)", err)
	}
	var b strings.Builder
	for i := range pods {
		for _, container := range pods[i].Spec.Containers {
			log := containerLog(ctx, s, &pods[i], container.Name, tail)
			fmt.Fprintf(&b, "--- %s/%s:\n%s\n", pods[i].Name, container.Name, strings.TrimRight(log, "\n"))
		}
	}
	return b.String()
}

// appTeamMountsASharedVolume is the app team's flow on the real node: a user who may only use
// SharedVolumes in one namespace (through the roles OLM creates for the operator's CRD)
// creates one, the operator makes it Ready, and a pod that mounts its claim gets as far as the
// kubelet asking the node's driver to publish exactly that volume handle. It returns how long the
// SharedVolume took to be Ready.
func appTeamMountsASharedVolume(ctx context.Context, tb testing.TB, s *testbed.Stack) time.Duration {
	tb.Helper()
	c, ns, user := s.Client, "team-a", "developer-a"
	// OLM's edit role has the write verbs and its view role the read verbs; the cluster's edit
	// role aggregates both.
	objects := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	for _, verb := range []string{"edit", "view"} {
		role := "sharedvolumes.aws-efs.managed.openshift.io-v1alpha1-" + verb
		if err := testutil.Eventually(ctx, "OLM's "+verb+" role of SharedVolumes", func(ctx context.Context) error {
			return c.Get(ctx, client.ObjectKey{Name: role}, &rbacv1.ClusterRole{})
		}); err != nil {
			tb.Fatal(err)
		}
		objects = append(objects, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sharedvolume-" + verb},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		})
	}
	for _, o := range objects {
		if err := c.Create(ctx, o); err != nil {
			tb.Fatal(err)
		}
	}
	config := rest.CopyConfig(s.Config)
	config.Impersonate = rest.ImpersonationConfig{UserName: user}
	developer, err := client.New(config, client.Options{Scheme: c.Scheme()})
	if err != nil {
		tb.Fatal(err)
	}
	sv := &sharedvolumev1alpha1.SharedVolume{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared-data"},
		Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123abcd", AccessPointID: "fsap-0123456789abcdef0"},
	}
	// The role is namespaced: the same user may not create one anywhere else.
	elsewhere := sv.DeepCopy()
	elsewhere.Namespace = "default"
	if err := developer.Create(ctx, elsewhere); err == nil || !strings.Contains(err.Error(), "forbidden") {
		tb.Fatalf("the developer created a SharedVolume outside its namespace: %v", err)
	}
	begin := time.Now()
	if err := developer.Create(ctx, sv); err != nil {
		tb.Fatalf("the developer's SharedVolume: %v", err)
	}
	// The finalizer policy the operator put up, bound to the ClusterRole OLM made for its CSV,
	// gave the SharedVolume its finalizer as the API server admitted it.
	if !slices.Contains(sv.Finalizers, efs.SharedVolumeFinalizer) {
		tb.Errorf("the SharedVolume was admitted with finalizers %q, without %s: the finalizer policy is not bound to what OLM made for the CSV", sv.Finalizers, efs.SharedVolumeFinalizer)
	}
	if err := testutil.Eventually(ctx, "the SharedVolume Ready", func(ctx context.Context) error {
		if err := developer.Get(ctx, client.ObjectKeyFromObject(sv), sv); err != nil {
			return err
		}
		if sv.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady || sv.Status.ClaimRef == nil {
			return fmt.Errorf("phase %s: %s", sv.Status.Phase, sv.Status.Message)
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	ready := time.Since(begin)

	handle := sv.Spec.FileSystemID + "::" + sv.Spec.AccessPointID
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "uses-shared-data"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{testbed.RealNodeLabel: "true"},
			Containers: []corev1.Container{{
				Name: "app", Image: testbed.PauseImage,
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: sv.Status.ClaimRef.Name},
			}}},
		},
	}
	if err := c.Create(ctx, pod); err != nil {
		tb.Fatal(err)
	}
	// The kubelet reports the driver's answer to NodePublishVolume in the pod's events.
	want := csistandin.NoEFS + ": NodePublishVolume of volume " + handle
	if err := testutil.Eventually(ctx, "the kubelet calls NodePublishVolume for "+handle, func(ctx context.Context) error {
		var events corev1.EventList
		if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name != pod.Name {
				continue
			}
			if e.Reason == "FailedMount" && strings.Contains(e.Message, want) {
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return fmt.Errorf("the pod's events: %v", seen)
	}); err != nil {
		tb.Fatal(err)
	}
	return ready
}
