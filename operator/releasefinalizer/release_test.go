package releasefinalizer_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/operator/releasefinalizer"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

func TestReleaseFinalizer(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.InstallOpenShift(ctx, testbed.OpenShiftOptions{}); err != nil {
		t.Fatal(err)
	}
	c := s.Client
	ours := []string{
		efs.OperatorName + ".operator.openshift.io/AWSEFSDriverUninstall",
		efs.OperatorName + ".operator.openshift.io/AWSEFSDriverNodeServiceController",
	}
	foreign := "example.com/keep-me"
	cr := &operatorv1.ClusterCSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: efs.CRName, Finalizers: append(slices.Clone(ours), foreign)},
		Spec:       operatorv1.ClusterCSIDriverSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
	}
	if err := c.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	run := func(dryRun bool) (string, error) {
		var out bytes.Buffer
		err := (&releasefinalizer.Release{ClusterOptions: kube.ClusterOptions{Config: s.Config, DryRun: dryRun}, Out: &out}).Run(ctx)
		return out.String(), err
	}
	finalizers := func() []string {
		t.Helper()
		var got operatorv1.ClusterCSIDriver
		if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &got); err != nil {
			t.Fatal(err)
		}
		return got.Finalizers
	}

	// While any EFS operator runs, the supported one or the community one, the verb refuses.
	testutil.AssertRefusedWhileOperatorsRun(ctx, t, c, efs.OperatorDeployments, func() error {
		_, err := run(false)
		return err
	}, "is still installed")

	// By default it only prints its plan.
	out, err := run(true)
	if err != nil || !strings.Contains(out, ours[0]) || !strings.Contains(out, "dry run: nothing changed") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if got := finalizers(); len(got) != 3 {
		t.Fatalf("the dry run changed the finalizers: %v", got)
	}
	// The plan as data.
	var raw bytes.Buffer
	if err := (&releasefinalizer.Release{ClusterOptions: kube.ClusterOptions{Config: s.Config, DryRun: true}, Output: "yaml", Out: &raw}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	var plan releasefinalizer.Plan
	if err := yaml.Unmarshal(raw.Bytes(), &plan); err != nil || !plan.DryRun || !plan.Exists || plan.Released != 0 || !slices.Equal(plan.Finalizers, ours) {
		t.Errorf("-o yaml: %v, %+v, want the dry run of %v\n%s", err, plan, ours, raw.String())
	}

	// Deleting the CR waits on the finalizers; releasing ours leaves the foreign one.
	if err := c.Delete(ctx, cr); err != nil {
		t.Fatal(err)
	}
	if out, err = run(false); err != nil {
		t.Fatal(err)
	}
	if got := finalizers(); !slices.Equal(got, []string{foreign}) {
		t.Errorf("finalizers after release: %v, want only %s", got, foreign)
	}
	if !strings.Contains(out, "released 2 finalizers") {
		t.Errorf("output: %s", out)
	}
	// Once the last foreign finalizer goes, the CR is gone and the verb has nothing to do.
	var got operatorv1.ClusterCSIDriver
	if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &got); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = nil
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &got); !apierrors.IsNotFound(err) {
		t.Fatalf("CR still exists: %v", err)
	}
	if out, err = run(false); err != nil || !strings.Contains(out, "nothing to release") {
		t.Errorf("without a CR: %v\n%s", err, out)
	}
}
