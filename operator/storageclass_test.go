package operator_test

import (
	"context"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// TestNoStorageClassThatCannotProvision: the driver provisions only from a class that names a
// file system, so the operator ships no StorageClass, removes the parameterless efs-sc that
// earlier releases and the community operator made, and keeps one an admin configured.
func TestNoStorageClassThatCannotProvision(t *testing.T) {
	adminParameters := map[string]string{"provisioningMode": "efs-ap", "fileSystemId": "fs-0123abcd", "directoryPerms": "700"}
	for _, tc := range []struct {
		name   string
		seeded *storagev1.StorageClass // nil: none before the operator starts
		kept   bool
	}{
		{name: "fresh install creates none"},
		{name: "an earlier release's parameterless class goes", seeded: &storagev1.StorageClass{Provisioner: efs.DriverName}},
		{name: "an admin's class with a file system stays", seeded: &storagev1.StorageClass{Provisioner: efs.DriverName, Parameters: adminParameters}, kept: true},
		{name: "another driver's class of that name stays", seeded: &storagev1.StorageClass{Provisioner: "example.com/nfs"}, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fixture.SetOperatorEnv(t)
			h := newHarness(t, testbed.APIServer, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
			ctx, cancel := progress.WithStall(context.Background(), 2*time.Minute)
			defer cancel()
			sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: efs.StorageClass}}
			if tc.seeded != nil {
				sc = tc.seeded.DeepCopy()
				sc.Name = efs.StorageClass
				sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
				must(t, h.c.Create(ctx, sc))
			}
			h.runOperator()
			h.createCR(ctx, efs.CRName, operatorv1.Managed)
			// Adoption looks at the class before it lets library-go apply the operands, so once
			// every operand exists the class has had its verdict.
			for _, obj := range manualModeOperands() { // no CredentialsRequest in Manual mode
				must(t, eventually(ctx, "operand "+obj.GetName(), h.exists(obj)))
			}

			var got storagev1.StorageClass
			err := h.c.Get(ctx, client.ObjectKeyFromObject(sc), &got)
			switch {
			case tc.kept && err != nil:
				t.Fatalf("StorageClass %s was removed: %v", sc.Name, err)
			case tc.kept && (got.UID != sc.UID || got.ResourceVersion != sc.ResourceVersion):
				t.Errorf("StorageClass %s was changed: %+v", sc.Name, got)
			case !tc.kept && !apierrors.IsNotFound(err):
				t.Errorf("StorageClass %s exists (%v): %+v", sc.Name, err, got)
			}
			if tc.seeded != nil && !tc.kept {
				must(t, eventually(ctx, "the UnusableStorageClassRemoved event", h.eventSeen("UnusableStorageClassRemoved")))
			}
		})
	}
}
