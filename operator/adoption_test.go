package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/drivers/communityefs/communityefscrd"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/operator"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

const communityLabel = efs.CommunityOwnedLabel

// seedCommunityInstall creates what the community aws-efs-operator leaves on a cluster
// (docs/architecture.md#the-community-efs-operator): its SharedVolume CRD, and the driver objects, labelled and owned by the CRD.
func seedCommunityInstall(ctx context.Context, t *testing.T, h *harness) []client.Object {
	t.Helper()
	return seedCommunityInstallIn(ctx, t, h, ns)
}

// seedCommunityInstallIn is seedCommunityInstall with the driver in namespace.
func seedCommunityInstallIn(ctx context.Context, t *testing.T, h *harness, namespace string) []client.Object {
	t.Helper()
	crd, err := testbed.DecodeCRD(communityefscrd.SharedVolumes)
	must(t, err)
	must(t, testbed.InstallCRDs(ctx, h.c, crd))
	objects, err := fixture.CommunityDriver(ctx, h.c, namespace)
	must(t, err)
	return objects
}

// seedSharedVolume creates a bound PV and PVC the way the community SharedVolume controller did.
func seedSharedVolume(ctx context.Context, t *testing.T, h *harness, namespace, name string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	t.Helper()
	pv, pvc, err := fixture.BoundVolume(ctx, h.c, namespace, name)
	must(t, err)
	return pv, pvc
}

func TestAdoptsTheCommunityDriverInPlace(t *testing.T) {
	fixture.SetOperatorEnv(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, cancel := progress.WithStall(context.Background(), 3*time.Minute)
	defer cancel()
	community := seedCommunityInstall(ctx, t, h)
	pv, pvc := seedSharedVolume(ctx, t, h, "app", "data")
	uids := map[string]types.UID{}
	for _, o := range community {
		must(t, h.c.Get(ctx, client.ObjectKeyFromObject(o), o))
		uids[fmt.Sprintf("%T/%s", o, o.GetName())] = o.GetUID()
	}
	pvVersion, pvcVersion := pv.ResourceVersion, pvc.ResourceVersion

	h.runOperator()
	// Without the CR the operator leaves the community driver alone: once it has processed the
	// missing CR (its event), the DaemonSet is still the community one.
	must(t, eventually(ctx, "the ClusterCSIDriverMissing event", h.eventSeen("ClusterCSIDriverMissing")))
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}}
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(ds), ds))
	if ds.Spec.Template.Spec.Containers[0].Image != "amazon/aws-efs-csi-driver:v1.0.0" {
		t.Fatalf("the DaemonSet changed before the CR existed: %s", ds.Spec.Template.Spec.Containers[0].Image)
	}

	h.createCR(ctx, efs.CRName, operatorv1.Managed)
	must(t, eventually(ctx, "the DaemonSet to run the supported driver", func(ctx context.Context) error {
		if err := h.available(ds)(ctx); err != nil {
			return err
		}
		if img := ds.Spec.Template.Spec.Containers[0].Image; img != fixture.Images[efs.DriverImageEnv] {
			return fmt.Errorf("image %s", img)
		}
		return nil
	}))
	// What only the community driver used goes: its SCC, and its StorageClass, which names no
	// file system and so could not provision anything.
	scc, storageClass := community[1], community[3]
	must(t, eventually(ctx, "the community SCC to go", h.gone(scc)))
	must(t, eventually(ctx, "the parameterless StorageClass to go", h.gone(storageClass)))
	must(t, eventually(ctx, "adoption to settle", h.conditionIs("AWSEFSDriverAdoptionProgressing", operatorv1.ConditionFalse)))

	adopted := []client.Object{community[0], community[2], community[4]} // ServiceAccount, CSIDriver, DaemonSet
	for _, o := range adopted {
		key := fmt.Sprintf("%T/%s", o, o.GetName())
		must(t, h.c.Get(ctx, client.ObjectKeyFromObject(o), o))
		if o.GetUID() != uids[key] {
			t.Errorf("%s was re-created: UID %s, was %s", key, o.GetUID(), uids[key])
		}
		if len(o.GetOwnerReferences()) != 0 {
			t.Errorf("%s still has owner references %v", key, o.GetOwnerReferences())
		}
		if _, ok := o.GetLabels()[communityLabel]; ok {
			t.Errorf("%s still carries the community ownership label", key)
		}
	}
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(pv), pv))
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc))
	if pv.ResourceVersion != pvVersion || pvc.ResourceVersion != pvcVersion {
		t.Errorf("the PV or PVC was touched: resourceVersions %s/%s, were %s/%s", pv.ResourceVersion, pvc.ResourceVersion, pvVersion, pvcVersion)
	}

	// Deleting the SharedVolume CRD no longer garbage-collects the driver. A canary still owned
	// by the CRD shows when the garbage collector has processed the deletion.
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "sharedvolumes.aws-efs.managed.openshift.io"}}
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(crd), crd))
	canary := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gc-canary", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name, UID: crd.UID,
	}}}}
	must(t, h.c.Create(ctx, canary))
	must(t, h.c.Delete(ctx, crd))
	must(t, eventually(ctx, "the CRD to go", h.gone(crd)))
	must(t, eventually(ctx, "the garbage collector to collect the canary", h.gone(canary)))
	for _, o := range adopted {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil || o.GetDeletionTimestamp() != nil {
			t.Errorf("%T %s was collected with the CRD: %v", o, o.GetName(), err)
		}
	}
}

// TestNeverTwoNodePlugins: another node plugin of efs.csi.aws.com that cannot be adopted in
// place (a community driver left in another namespace; OpenShift's own operator's, from its
// shipped manifest, in this operator's namespace) keeps the operator from deploying its own. It
// says who installed the other plugin and how to remove it, and deploys the driver once it is
// gone, as the message's commands leave it.
func TestNeverTwoNodePlugins(t *testing.T) {
	fixture.SetOperatorEnv(t)
	for _, tc := range []struct {
		name string
		// seed creates the other plugin and returns its DaemonSet.
		seed func(ctx context.Context, t *testing.T, h *harness) *appsv1.DaemonSet
		says []string
	}{{
		name: "community driver in another namespace",
		seed: func(ctx context.Context, t *testing.T, h *harness) *appsv1.DaemonSet {
			const elsewhere = "openshift-operators"
			must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}))
			for _, o := range seedCommunityInstallIn(ctx, t, h, elsewhere) {
				if ds, ok := o.(*appsv1.DaemonSet); ok {
					return ds
				}
			}
			t.Fatal("the community install has no DaemonSet")
			return nil
		},
		says: []string{"DaemonSet openshift-operators/efs-csi-node of the community aws-efs-operator", "oc delete daemonset efs-csi-node -n openshift-operators"},
	}, {
		name: "OpenShift's operator in this namespace",
		seed: func(ctx context.Context, t *testing.T, h *harness) *appsv1.DaemonSet {
			ds := operator.InstallerDaemonSet(t, "openshift-csi-operator-node.yaml", ns)
			must(t, h.c.Create(ctx, &ds))
			return &ds
		},
		says: []string{
			"DaemonSet " + ns + "/aws-efs-csi-driver-node of OpenShift's AWS EFS CSI Driver Operator",
			"oc delete subscription,clusterserviceversion -n " + ns + " -l operators.coreos.com/aws-efs-csi-driver-operator." + ns,
			"oc delete daemonset aws-efs-csi-driver-node -n " + ns,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
			ctx, cancel := progress.WithStall(context.Background(), 3*time.Minute)
			defer cancel()
			other := tc.seed(ctx, t, h)
			h.runOperator()
			h.createCR(ctx, efs.CRName, operatorv1.Managed)
			must(t, eventually(ctx, "the refusal", func(ctx context.Context) error {
				cr, err := h.cr(ctx)
				if err != nil {
					return err
				}
				for _, c := range cr.Status.Conditions {
					if c.Type != "AWSEFSDriverAdoptionDegraded" {
						continue
					}
					if c.Status != operatorv1.ConditionTrue || c.Reason != "SecondNodePlugin" {
						return fmt.Errorf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
					}
					for _, want := range tc.says {
						if !strings.Contains(c.Message, want) {
							t.Errorf("the refusal lacks %q: %s", want, c.Message)
						}
					}
					return nil
				}
				return fmt.Errorf("no AWSEFSDriverAdoptionDegraded condition")
			}))
			// The refusal is written on every sync; the operand controllers, gated until
			// adoption, have had the same time to act.
			for _, obj := range []client.Object{
				&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}},
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.ControllerDeployment}},
			} {
				if err := h.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
					t.Errorf("%T %s exists next to the other node plugin (%v)", obj, obj.GetName(), err)
				}
			}

			must(t, h.c.Delete(ctx, other))
			must(t, eventually(ctx, "the driver's node DaemonSet", h.exists(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: efs.NodeDaemonSet}})))
			must(t, eventually(ctx, "the refusal to clear", h.conditionIs("AWSEFSDriverAdoptionDegraded", operatorv1.ConditionFalse)))
		})
	}
}
