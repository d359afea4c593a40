package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/docs/ci"
	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/release"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestCLIImageOnRealNode runs the csi-olm image a release publishes, as tools.txt pins it, on the
// real node's containerd, as a pipeline runs it: catalogs mounted at the image's working
// directory, a verb or the CI recipe's script per pod, the verdict in the container's exit status.
// cliImage is the csi-olm image the release published, as its tools file names it.
func (p *published) cliImage(t testing.TB) string {
	t.Helper()
	tools, err := os.ReadFile(filepath.Join(p.dir, release.ToolsFile))
	if err != nil {
		t.Fatal(err)
	}
	image, ok := strings.CutPrefix(strings.TrimSpace(string(tools)), "csi-olm ")
	if !ok {
		t.Fatalf("%s: %q, want the csi-olm image", release.ToolsFile, tools)
	}
	return image
}

func TestCLIImageOnRealNode(t *testing.T) {
	s := startRealNode(t)
	p := publish(t, s)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()

	image := p.cliImage(t)
	ns := cliNamespace(t, s, "csi-olm-cli")
	pods := 0
	// start runs the image's container c in a pod of its own, with work mounted at the image's
	// working directory; the function it returns waits for the pod to end and returns the
	// container's exit code and log. Pods run side by side: each mostly waits.
	start := func(t *testing.T, work string, hostNetwork bool, c corev1.Container) func() (int, string) {
		t.Helper()
		pods++
		c.Name = "csi-olm"
		if c.Image == "" {
			c.Image = image
		}
		c.SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: images.CLIWorkDir, ReadOnly: true}}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("csi-olm-%d", pods)},
			Spec: corev1.PodSpec{
				NodeName:      testbed.RealNodeName,
				RestartPolicy: corev1.RestartPolicyNever,
				HostNetwork:   hostNetwork,
				Containers:    []corev1.Container{c},
				Volumes:       []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: work}}}},
			},
		}
		if err := s.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		what := strings.Join(append(append([]string{}, c.Command...), c.Args...), " ")
		return func() (int, string) {
			t.Helper()
			var got corev1.Pod
			if err := testutil.Eventually(ctx, what+" to end", func(ctx context.Context) error {
				if err := s.Client.Get(ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
					return err
				}
				if got.Status.Phase != corev1.PodSucceeded && got.Status.Phase != corev1.PodFailed {
					return fmt.Errorf("phase %s", got.Status.Phase)
				}
				return nil
			}); err != nil {
				t.Fatalf("%v\npod status: %+v", err, got.Status)
			}
			log, err := kubernetes.NewForConfigOrDie(s.Config).CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			code := -1
			if cs := got.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Terminated != nil {
				code = int(cs[0].State.Terminated.ExitCode)
			}
			return code, string(log)
		}
	}

	t.Run("verbs", func(t *testing.T) {
		// The catalogs a pipeline would check out: the committed certified catalogs of two
		// minors, and the synthetic catalog without the one that provides its dependencies.
		work := filepath.Join(t.TempDir(), "work")
		for dir, from := range map[string]string{"v4.10": "../../catalog/certified/v4.10", "v4.11": "../../catalog/certified/v4.11"} {
			if err := os.CopyFS(filepath.Join(work, dir), os.DirFS(from)); err != nil {
				t.Fatal(err)
			}
		}
		if err := synthcatalog.Write(filepath.Join(work, "synthetic")); err != nil {
			t.Fatal(err)
		}
		readableByAll(t, work)
		cases := []struct {
			args []string
			want int
			says string
		}{
			{[]string{"catalog", "validate", "v4.11"}, exitcode.OK, "0 errors"},
			{[]string{"catalog", "diff", "--breaking", "v4.11", "v4.10"}, exitcode.Findings, "breaking"},
			// One installed bundle, taken as given: its dependency's catalog is not there.
			{[]string{"catalog", "simulate", "synthetic", "--installed", synthcatalog.BundleName("synthetic-needs-dependency", "1.1.0")}, exitcode.Findings, "ResolutionFailed"},
			// Every start of --all runs, so what it needs is installed beside it.
			{[]string{"catalog", "simulate", "--all", "synthetic"}, exitcode.OK, "beside it  an operator from another catalog"},
			{[]string{"catalog", "validate", "absent"}, exitcode.Failure, "no such directory"},
		}
		waits := make([]func() (int, string), len(cases))
		for i, tc := range cases {
			waits[i] = start(t, work, false, corev1.Container{Args: tc.args})
		}
		for i, tc := range cases {
			code, log := waits[i]()
			if code != tc.want || !strings.Contains(log, tc.says) {
				t.Errorf("csi-olm %s in the image: exit %d, want %d, and a report saying %q:\n%s", strings.Join(tc.args, " "), code, tc.want, tc.says, log)
			}
		}
	})

	t.Run("the CI recipe's script", func(t *testing.T) {
		// A catalog repository as its CI checks it out: the certified tree the release
		// published, the same tree before a change (SINCE), the tree after a breaking change,
		// and the release's catalogs.txt.
		// The release names its images on quay.io, which the stack's registry mirrors: the
		// pipeline's catalogs.txt names the mirror, as a registry mirror's configuration would
		// point it there, with the digests the release pushed.
		work := filepath.Join(t.TempDir(), "work")
		published := filepath.Join(p.dir, "catalog", "certified")
		for _, dir := range []string{"certified", "before/certified", "change/certified"} {
			if err := os.CopyFS(filepath.Join(work, dir), os.DirFS(published)); err != nil {
				t.Fatal(err)
			}
		}
		catalogs, err := os.ReadFile(filepath.Join(p.dir, release.CatalogsFile))
		if err != nil {
			t.Fatal(err)
		}
		mirrored := strings.ReplaceAll(string(catalogs), " "+publishedRegistry+"/", " "+s.Registry+"/"+publishedRegistry+"/")
		if mirrored == string(catalogs) {
			t.Fatalf("%s names no image under %s:\n%s", release.CatalogsFile, publishedRegistry, catalogs)
		}
		if err := os.WriteFile(filepath.Join(work, release.CatalogsFile), []byte(mirrored), 0o644); err != nil {
			t.Fatal(err)
		}
		// The change: the newest minor's catalog drops the channel of the minor before it, so a
		// cluster subscribed to that channel is stranded when it upgrades, and a Subscription to
		// it in the published catalog finds its channel gone.
		certified, err := tree.Open(filepath.Join(work, "change", "certified"))
		if err != nil {
			t.Fatal(err)
		}
		newestMinor := certified.Minors[len(certified.Minors)-1]
		newest, dir := newestMinor.Index(), certified.Path(newestMinor)
		const dropped = "4.10"
		if err := synthcatalog.DropChannel(ctx, dir, dropped); err != nil {
			t.Fatal(err)
		}
		readableByAll(t, work)
		// The script runs as the recipe's Tekton Task runs it: its step, with the Task's
		// parameters, executed so that its #!/bin/sh line runs the image's shell. The registry
		// is on the host's loopback.
		step := func(tree string) corev1.Container {
			return tektonStep(t, map[string]string{
				"image": image, "tree": tree, "published": release.CatalogsFile, "since": "before/certified", "registry-flags": "--use-http",
			})
		}
		asPublished, changed := start(t, work, true, step("certified")), start(t, work, true, step("change/certified"))
		if code, log := asPublished(); code != exitcode.OK || !strings.Contains(log, "certified passed every check") {
			t.Errorf("check-catalogs.sh on the published tree: exit %d, want 0 and every check passed:\n%s", code, log)
		}
		code, log := changed()
		t.Logf("check-catalogs.sh on the breaking change:\n%s", log)
		for _, says := range []string{
			"channel " + dropped, "diff --breaking certified " + newest + " (exit 1)", "cluster-upgrade certified (exit 1)",
		} {
			if code != exitcode.Findings || !strings.Contains(log, says) {
				t.Errorf("check-catalogs.sh on a change that drops channel %s from %s: exit %d, want 1 and a report saying %q:\n%s", dropped, newest, code, says, log)
			}
		}
	})
}

// tektonStep is the step of the CI recipe's Tekton Task as Tekton runs it with params: its
// parameters and the source workspace's path (the image's working directory) put in.
func tektonStep(t *testing.T, params map[string]string) corev1.Container {
	t.Helper()
	var task struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Spec       struct {
			Description string `json:"description"`
			Workspaces  []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				ReadOnly    bool   `json:"readOnly"`
			} `json:"workspaces"`
			Params []struct {
				Name        string  `json:"name"`
				Description string  `json:"description"`
				Default     *string `json:"default"`
			} `json:"params"`
			// Tekton's steps have a container's fields.
			Steps []corev1.Container `json:"steps"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(ci.TektonTask, &task); err != nil {
		t.Fatalf("docs/ci/tekton-task.yaml: %v", err)
	}
	if task.APIVersion != "tekton.dev/v1" || task.Kind != "Task" {
		t.Fatalf("docs/ci/tekton-task.yaml is a %s %s, want a tekton.dev/v1 Task", task.APIVersion, task.Kind)
	}
	if len(task.Spec.Steps) != 1 {
		t.Fatalf("docs/ci/tekton-task.yaml has %d steps, want the one that runs the script", len(task.Spec.Steps))
	}
	pairs := []string{"$(workspaces.source.path)", images.CLIWorkDir}
	for _, p := range task.Spec.Params {
		v, given := params[p.Name]
		switch {
		case given:
		case p.Default != nil:
			v = *p.Default
		default:
			t.Fatalf("docs/ci/tekton-task.yaml: parameter %s has no default, and the test gives none", p.Name)
		}
		pairs = append(pairs, "$(params."+p.Name+")", v)
	}
	r := strings.NewReplacer(pairs...)
	step := task.Spec.Steps[0]
	step.Image, step.WorkingDir = r.Replace(step.Image), r.Replace(step.WorkingDir)
	for _, list := range [][]string{step.Command, step.Args} {
		for i := range list {
			list[i] = r.Replace(list[i])
		}
	}
	for i := range step.Env {
		step.Env[i].Value = r.Replace(step.Env[i].Value)
	}
	return step
}

// cliNamespace creates a namespace for pods that mount the test's directories, and deletes it,
// waiting until it is gone, before those directories go.
func cliNamespace(t *testing.T, s *testbed.Stack, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := s.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := progress.WithStall(context.Background(), flowStall)
		defer cancel()
		if err := s.Client.Delete(ctx, ns); err != nil {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
			return
		}
		if err := testutil.Eventually(ctx, "namespace "+ns.Name+" gone", func(ctx context.Context) error {
			err := s.Client.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		}); err != nil {
			t.Error(err)
		}
	})
	return name
}

// readableByAll opens dir's tree to the image's non-root user.
func readableByAll(t *testing.T, dir string) {
	t.Helper()
	if err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode)
	}); err != nil {
		t.Fatal(err)
	}
}
