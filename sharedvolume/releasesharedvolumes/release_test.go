package releasesharedvolumes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
	"github.com/csi-olm/csi-olm/sharedvolume/releasesharedvolumes"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestReleaseSharedVolumes: with no operator left, a deleted SharedVolume waits on its finalizer
// until the verb releases it; its PV and PVC stay.
func TestReleaseSharedVolumes(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svCRD, err := testbed.DecodeCRD(crd.SharedVolumes)
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.InstallCRDs(ctx, s.Client, svCRD); err != nil {
		t.Fatal(err)
	}
	c := s.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	mk := func(name string) *sharedvolumev1alpha1.SharedVolume {
		sv := &sharedvolumev1alpha1.SharedVolume{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Finalizers: []string{efs.SharedVolumeFinalizer}},
			Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-01", AccessPointID: "fsap-01"},
		}
		if err := c.Create(ctx, sv); err != nil {
			t.Fatal(err)
		}
		return sv
	}
	deleted, kept := mk("gone"), mk("kept")
	if err := c.Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	release := func(dryRun bool) (string, error) {
		var out bytes.Buffer
		err := (&releasesharedvolumes.Release{ClusterOptions: kube.ClusterOptions{Config: s.Config, DryRun: dryRun}, Out: &out}).Run(ctx)
		return out.String(), err
	}
	run := func(dryRun bool) string {
		t.Helper()
		out, err := release(dryRun)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// While any SharedVolume controller runs, the supported operator's or the community one's,
	// the verb refuses and releases nothing.
	testutil.AssertRefusedWhileOperatorsRun(ctx, t, c, efs.OperatorDeployments, func() error {
		_, err := release(false)
		return err
	}, "still runs")
	if err := c.Get(ctx, client.ObjectKeyFromObject(deleted), deleted); err != nil {
		t.Fatalf("a refused run released the SharedVolume: %v", err)
	}
	if out := run(true); !strings.Contains(out, "SharedVolume app/gone") || strings.Contains(out, "app/kept") || !strings.Contains(out, "dry run") {
		t.Errorf("dry run output:\n%s", out)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(deleted), deleted); err != nil {
		t.Fatalf("the dry run released it: %v", err)
	}
	// The dry run's plan as data.
	var raw bytes.Buffer
	if err := (&releasesharedvolumes.Release{ClusterOptions: kube.ClusterOptions{Config: s.Config, DryRun: true}, Output: "json", Out: &raw}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	var plan releasesharedvolumes.Plan
	if err := json.Unmarshal(raw.Bytes(), &plan); err != nil || !plan.DryRun || plan.Released != 0 || len(plan.SharedVolumes) != 1 ||
		plan.SharedVolumes[0] != (releasesharedvolumes.Target{Namespace: "app", Name: "gone", Finalizer: efs.SharedVolumeFinalizer,
			PersistentVolume: efs.SharedVolumePV("app", "gone"), PersistentVolumeClaim: efs.SharedVolumePVC("gone")}) {
		t.Errorf("-o json: %v, %+v\n%s", err, plan, raw.String())
	}
	if out := run(false); !strings.Contains(out, "released 1 SharedVolumes") {
		t.Errorf("output:\n%s", out)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(deleted), deleted); !apierrors.IsNotFound(err) {
		t.Errorf("the deleted SharedVolume is still there: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(kept), kept); err != nil || len(kept.Finalizers) != 1 {
		t.Errorf("a SharedVolume not being deleted was released: %v %v", err, kept.Finalizers)
	}
}
