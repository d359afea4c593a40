package crdcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/drivers/communityefs/communityefscrd"
	communityefsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/communityefs/v1alpha1"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/sharedvolume/crd"
	"github.com/csi-olm/csi-olm/sharedvolume/crdcheck"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestCheckOnARealAPIServer: SharedVolumes the community CRD accepted, some of which the certified
// CRD refuses. The check names exactly those, with the API server's own words, as the API server
// does once the certified CRD replaces the community one; it passes once they are gone.
func TestCheckOnARealAPIServer(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := s.Client
	check := func() (string, error) {
		var out bytes.Buffer
		err := (&crdcheck.Check{ClusterOptions: kube.ClusterOptions{Config: s.Config}, Out: &out}).Run(ctx)
		return out.String(), err
	}

	out, err := check()
	if err != nil || out != "the cluster serves no SharedVolume API (sharedvolumes.aws-efs.managed.openshift.io): no SharedVolume to check\n" {
		t.Fatalf("without the CRD: %v\n%s", err, out)
	}

	communityCRD, err := testbed.DecodeCRD(communityefscrd.SharedVolumes)
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.InstallCRDs(ctx, c, communityCRD); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"app", "logs", "replay"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	valid := communityefsv1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123cdef", AccessPointID: "fsap-0123456789abcdef"}
	ready := &communityefsv1alpha1.SharedVolumeStatus{Phase: "Ready", ClaimRef: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: efs.SharedVolumePVC("data")}}
	for _, sv := range []struct {
		namespace, name string
		spec            *communityefsv1alpha1.SharedVolumeSpec
		status          *communityefsv1alpha1.SharedVolumeStatus
	}{
		{"app", "data", &valid, ready},
		{"logs", "logs", &valid, nil},
		// The community schema has no maxLength.
		{"app", "long-access-point", &communityefsv1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123cdef", AccessPointID: longAccessPointID}, ready},
		// Nor an enum on the phase, which any client with access to the status may write.
		{"app", "mounted", &valid, &communityefsv1alpha1.SharedVolumeStatus{Phase: "Mounted"}},
		// Nor a required spec: kubectl creates one without.
		{"logs", "no-spec", nil, nil},
	} {
		create(ctx, t, c, sv.namespace, sv.name, sv.spec, sv.status)
	}

	want := `SharedVolume app/long-access-point is invalid under the certified CRD:
  spec.accessPointID: Too long: may not be more than 64 bytes
SharedVolume app/mounted is invalid under the certified CRD:
  status.phase: Unsupported value: "Mounted": supported values: "Pending", "Ready", "Deleting", "Failed"
SharedVolume logs/no-spec is invalid under the certified CRD:
  spec: Required value
3 of 5 SharedVolumes are invalid under the certified CRD: fix or delete them before upgrading with spec.install.preflight.crdUpgradeSafety.enforcement: None
`
	out, err = check()
	if err == nil || err.Error() != "3 of 5 SharedVolumes are invalid under the certified CRD" || out != want {
		t.Fatalf("err = %v, output:\n%s", err, out)
	}
	t.Logf("csi-olm efs check-sharedvolumes (community CRD):\n%s", out)
	// The same check as data, limited to one namespace.
	var asJSON bytes.Buffer
	err = (&crdcheck.Check{ClusterOptions: kube.ClusterOptions{Config: s.Config, Namespace: "logs"}, Output: "json", Out: &asJSON}).Run(ctx)
	var report crdcheck.Report
	if jerr := json.Unmarshal(asJSON.Bytes(), &report); jerr != nil || exitcode.Of(err) != exitcode.Findings ||
		!report.Served || report.Checked != 2 || len(report.Invalid) != 1 || report.Invalid[0].Name != "no-spec" || !slices.Equal(report.Invalid[0].Problems, []string{"spec: Required value"}) {
		t.Errorf("-o json -n logs: %v, %v, %+v, want logs' two checked and no-spec invalid\n%s", err, jerr, report, asJSON.String())
	}
	// The problems the check reported, by SharedVolume.
	reported := map[string][]string{}
	var key string
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "  "); ok {
			reported[key] = append(reported[key], p)
		} else if k, ok := strings.CutSuffix(strings.TrimPrefix(line, "SharedVolume "), " is invalid under the certified CRD:"); ok {
			key = k
		}
	}

	// The upgrade, with the preflight off.
	certifiedCRD, err := testbed.DecodeCRD(crd.SharedVolumes)
	if err != nil {
		t.Fatal(err)
	}
	if err := testbed.InstallCRDs(ctx, c, certifiedCRD); err != nil {
		t.Fatal(err)
	}
	// The new schema is served once a write of a long ID is refused.
	if err := testutil.Eventually(ctx, "the certified schema served", func(ctx context.Context) error {
		probe := sharedVolume("replay", "probe")
		probe.Object["spec"] = map[string]any{"fileSystemID": "fs-01", "accessPointID": longAccessPointID}
		err := c.Create(ctx, probe)
		switch {
		case err == nil:
			return fmt.Errorf("still accepted: %w", c.Delete(ctx, probe))
		case !strings.Contains(err.Error(), "Too long"):
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	var all unstructured.UnstructuredList
	all.SetAPIVersion(sharedvolumev1alpha1.GroupVersion.String())
	all.SetKind("SharedVolumeList")
	if err := c.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 5 || len(reported) != 3 {
		t.Fatalf("%d SharedVolumes, %d reported", len(all.Items), len(reported))
	}
	for i := range all.Items {
		sv := &all.Items[i]
		key := sv.GetNamespace() + "/" + sv.GetName()
		problems, invalid := reported[key]

		// Every value the check refuses, the API server refuses to write: a copy of each
		// SharedVolume, as a restore or a GitOps re-apply writes it, is refused exactly when the
		// check reported the original, and with the check's own lines.
		replayErr := replay(ctx, c, sv)
		if invalid != (replayErr != nil) {
			t.Errorf("%s: the check reports %q, the API server says to a copy: %v", key, problems, replayErr)
		}
		for _, p := range problems {
			if replayErr == nil || !strings.Contains(replayErr.Error(), p) {
				t.Errorf("%s: the check says %q, the API server: %v", key, p, replayErr)
			}
		}

		// An update that leaves the object as it is (a label here, the removal of a finalizer
		// the same) fails on the missing spec, a root-level error. Kubernetes 1.30 and later
		// ratchet the other invalid values, which the update does not change; older releases
		// refuse those updates too.
		sv.SetLabels(map[string]string{"checked": "true"})
		err := c.Update(ctx, sv)
		switch {
		case key == "logs/no-spec":
			if err == nil || !strings.Contains(err.Error(), "spec: Required value") {
				t.Errorf("%s: a label update: %v, want spec: Required value", key, err)
			}
		case err != nil:
			t.Errorf("%s: a label update: %v", key, err)
		}
	}

	// Read through the certified CRD, the objects get the same verdicts.
	if out, err := check(); err == nil || out != want {
		t.Errorf("with the certified CRD: err = %v, output:\n%s", err, out)
	}
	for key := range reported {
		ns, name, _ := strings.Cut(key, "/")
		if err := c.Delete(ctx, sharedVolume(ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	out, err = check()
	if err != nil || out != "every SharedVolume (2) is valid under the certified CRD\n" {
		t.Errorf("without the invalid ones: err = %v, output:\n%s", err, out)
	}
	t.Logf("csi-olm efs check-sharedvolumes (without them):\n%s", out)
}

// TestCheckReadsAVersionTheCertifiedCRDDoesNotServe: when the cluster serves SharedVolumes only
// at a version the certified CRD lacks, each is reported as such.
func TestCheckReadsAVersionTheCertifiedCRDDoesNotServe(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other, err := testbed.DecodeCRD(communityefscrd.SharedVolumes)
	if err != nil {
		t.Fatal(err)
	}
	other.Spec.Versions[0].Name = "v1beta1"
	if err := testbed.InstallCRDs(ctx, s.Client, other); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	sv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "aws-efs.managed.openshift.io/v1beta1", "kind": sharedvolumev1alpha1.Kind,
		"metadata": map[string]any{"namespace": "app", "name": "data"},
		"spec":     map[string]any{"fileSystemID": "fs-01", "accessPointID": "fsap-01"},
	}}
	if err := s.Client.Create(ctx, sv); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = (&crdcheck.Check{ClusterOptions: kube.ClusterOptions{Config: s.Config}, Out: &out}).Run(ctx)
	want := `SharedVolume app/data is invalid under the certified CRD:
  apiVersion: Unsupported value: "aws-efs.managed.openshift.io/v1beta1": supported values: "aws-efs.managed.openshift.io/v1alpha1"
1 of 1 SharedVolumes are invalid under the certified CRD: fix or delete them before upgrading with spec.install.preflight.crdUpgradeSafety.enforcement: None
`
	if exitcode.Of(err) != exitcode.Findings || out.String() != want {
		t.Errorf("err = %v (exit %d, want %d, findings), output:\n%s", err, exitcode.Of(err), exitcode.Findings, out.String())
	}
}

func sharedVolume(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(sharedvolumev1alpha1.GroupVersion.String())
	u.SetKind(sharedvolumev1alpha1.Kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// create makes a SharedVolume as the community operator's API accepts it: the spec, then the
// status through its subresource.
func create(ctx context.Context, t *testing.T, c client.Client, namespace, name string, spec *communityefsv1alpha1.SharedVolumeSpec, status *communityefsv1alpha1.SharedVolumeStatus) {
	t.Helper()
	sv := &communityefsv1alpha1.SharedVolume{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if spec != nil {
		sv.Spec = *spec
	}
	u := toUnstructured(t, sv)
	u.SetAPIVersion(sharedvolumev1alpha1.GroupVersion.String())
	u.SetKind(sharedvolumev1alpha1.Kind)
	delete(u.Object, "status")
	if spec == nil {
		delete(u.Object, "spec")
	}
	if err := c.Create(ctx, u); err != nil {
		t.Fatalf("creating %s/%s: %v", namespace, name, err)
	}
	if status == nil {
		return
	}
	sv.Status = *status
	u.Object["status"] = toUnstructured(t, sv).Object["status"]
	if err := c.Status().Update(ctx, u); err != nil {
		t.Fatalf("writing the status of %s/%s: %v", namespace, name, err)
	}
}

// replay writes a copy of a SharedVolume to namespace replay, its spec then its status, and
// deletes the copy.
func replay(ctx context.Context, c client.Client, sv *unstructured.Unstructured) (err error) {
	cp := sharedVolume("replay", sv.GetName())
	if spec, ok := sv.Object["spec"]; ok {
		cp.Object["spec"] = spec
	}
	if err := c.Create(ctx, cp); err != nil {
		return err
	}
	defer func() {
		if derr := c.Delete(ctx, sharedVolume("replay", sv.GetName())); derr != nil && err == nil {
			err = fmt.Errorf("deleting the copy: %w", derr)
		}
	}()
	status, ok := sv.Object["status"]
	if !ok {
		return nil
	}
	cp.Object["status"] = status
	return c.Status().Update(ctx, cp)
}
