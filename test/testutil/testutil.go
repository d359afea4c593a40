// Package testutil holds helpers shared by the tests of several packages.
package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/progress"
)

// Opm returns the opm binary that `make test` builds from this module's operator-registry and
// passes in CSI_OLM_OPM. Without it the test is skipped, saying how to run it.
func Opm(tb testing.TB) string {
	tb.Helper()
	return toolFromEnv(tb, "CSI_OLM_OPM", "opm")
}

// GRPCHealthProbe returns the grpc_health_probe that catalog images carry, which `make test`
// builds and passes in CSI_OLM_GRPC_HEALTH_PROBE. Without it the test is skipped, saying how to
// run it.
func GRPCHealthProbe(tb testing.TB) string {
	tb.Helper()
	return toolFromEnv(tb, "CSI_OLM_GRPC_HEALTH_PROBE", "grpc_health_probe")
}

func toolFromEnv(tb testing.TB, env, tool string) string {
	tb.Helper()
	path := os.Getenv(env)
	if path == "" {
		tb.Skipf("%s is not set: run through `make test` (or `make bench`), which builds %s (hack/tools.sh %s) and sets it", env, tool, tool)
	}
	if _, err := os.Stat(path); err != nil {
		tb.Fatalf("%s=%s: %v", env, path, err)
	}
	return path
}

// Snapshot maps the path of every file below dir, relative to dir, to its content.
func Snapshot(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	files := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(raw)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files
}

// AssertUnchanged fails the test if dir no longer holds exactly the files of before.
func AssertUnchanged(tb testing.TB, dir string, before map[string]string) {
	tb.Helper()
	after := Snapshot(tb, dir)
	for name, content := range before {
		if got, ok := after[name]; !ok {
			tb.Errorf("%s was removed", name)
		} else if got != content {
			tb.Errorf("%s was rewritten", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			tb.Errorf("%s was written", name)
		}
	}
}

// Median returns the median of values.
func Median(values []float64) float64 {
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// BuildBinary builds a main package of this module into the test's temporary directory, with
// the given build tags (the test hooks that release builds leave out), for this machine and
// otherwise as its image carries it (BuildStatic): the tests run what ships, and every build of
// the operator, the release tests' and the end-to-end tier's among them, shares one set of
// compiled packages in Go's cache.
func BuildBinary(tb testing.TB, pkg string, tags ...string) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := buildStatic(dir, runtime.GOARCH, tags, pkg); err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(dir, filepath.Base(pkg))
}

// Eventually polls cond every 100ms until it returns nil or ctx ends; the error says what was
// awaited, why the wait ended (a stall, under a progress.WithStall context) and the last reason
// it was not there. Each new reason is a step of ctx's progress.
func Eventually(ctx context.Context, what string, cond func(context.Context) error) error {
	var last error
	var reason progress.Reason
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		reason.Report(ctx, what, last)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w (last: %v)", what, progress.Cause(ctx), last)
	}
	return nil
}

// Parallel runs fn(i) for every i in [0, n) on 16 goroutines and returns the first error.
func Parallel(n int, fn func(i int) error) error { return ParallelOn(16, n, fn) }

// ParallelOn runs fn(i) for every i in [0, n) on workers goroutines and returns the first error.
func ParallelOn(workers, n int, fn func(i int) error) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return first
}

// AssertRefusedWhileOperatorsRun creates, one at a time, a Deployment of each name in the
// namespace openshift-operators (created unless the stack's OLM has it), and checks that run fails with an error naming it while it
// exists. The verbs that stand in for an uninstalled operator must refuse while one runs.
func AssertRefusedWhileOperatorsRun(ctx context.Context, t testing.TB, c client.Client, names []string, run func() error, refusal string) {
	t.Helper()
	const ns = "openshift-operators"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, name := range names {
		deploy := deployment(ns, name)
		if err := c.Create(ctx, deploy); err != nil {
			t.Fatal(err)
		}
		want := refusal + " (Deployment " + ns + "/" + name + ")"
		if err := run(); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want a refusal containing %q", err, want)
		}
		if err := c.Delete(ctx, deploy); err != nil {
			t.Fatal(err)
		}
	}
}

// deployment is the smallest valid Deployment.
func deployment(namespace, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: name}}},
			},
		},
	}
}

// BuildStatic builds a main package as `make operator-binaries` does for an image: statically
// linked (no cgo), for linux/goarch, without local paths. A binary PrebuildStatic built is
// returned as it is.
func BuildStatic(tb testing.TB, pkg, goarch string) string {
	tb.Helper()
	prebuiltMu.Lock()
	bin, ok := prebuilt[goarch+" "+pkg]
	prebuiltMu.Unlock()
	if ok {
		return bin
	}
	dir := filepath.Join(tb.TempDir(), goarch)
	if err := buildStatic(dir, goarch, nil, pkg); err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(dir, filepath.Base(pkg))
}

var (
	prebuiltMu sync.Mutex
	// prebuilt maps "goarch package" to a binary PrebuildStatic built.
	prebuilt = map[string]string{}
)

// PrebuildStatic builds the static binaries of pkgs for linux/goarch into dir with one go build,
// for BuildStatic to return. A test binary whose tests have deadlines calls it from TestMain: a
// cold build takes minutes, which must not be spent from a deadline meant for the cluster.
func PrebuildStatic(dir, goarch string, pkgs ...string) error {
	if err := buildStatic(dir, goarch, nil, pkgs...); err != nil {
		return err
	}
	prebuiltMu.Lock()
	defer prebuiltMu.Unlock()
	for _, pkg := range pkgs {
		prebuilt[goarch+" "+pkg] = filepath.Join(dir, filepath.Base(pkg))
	}
	return nil
}

func buildStatic(dir, goarch string, tags []string, pkgs ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-o", dir + string(filepath.Separator)}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s for linux/%s: %w\n%s", strings.Join(pkgs, " "), goarch, err, out)
	}
	return nil
}

// FreeLoopbackAddr returns a loopback address nothing listens on right now.
func FreeLoopbackAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
