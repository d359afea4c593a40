package operator_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	communitycrd "github.com/csi-olm/csi-olm/bundle/drivers/communityefs/crd"
	"github.com/csi-olm/csi-olm/operator"
	"github.com/csi-olm/csi-olm/test/testbed"
)

const communityLabel = "openshift.io/aws-efs-operator-owned"

// seedCommunityInstall creates what the community aws-efs-operator leaves on a cluster
// (DESIGN.md §3): its SharedVolume CRD, and the driver objects, labelled and owned by the CRD.
func seedCommunityInstall(ctx context.Context, t *testing.T, h *harness) []client.Object {
	t.Helper()
	crd, err := testbed.DecodeCRD(communitycrd.SharedVolumes)
	must(t, err)
	must(t, testbed.InstallCRDs(ctx, h.c, crd))
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(crd), crd))
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Namespace: namespace, Name: name,
			Labels: map[string]string{communityLabel: "true"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name, UID: crd.UID,
			}},
		}
	}
	podLabels := map[string]string{"app": "efs-csi-node"}
	scc := &unstructured.Unstructured{Object: map[string]any{
		"allowHostDirVolumePlugin": true, "allowHostIPC": false, "allowHostNetwork": true, "allowHostPID": false,
		"allowHostPorts": true, "allowPrivilegedContainer": true, "readOnlyRootFilesystem": false,
		"allowedCapabilities": nil, "defaultAddCapabilities": nil, "requiredDropCapabilities": nil, "priority": nil,
		"volumes": []any{"*"},
		"users":   []any{"system:serviceaccount:" + ns + ":efs-csi-sa"},
	}}
	scc.SetGroupVersionKind(schema.GroupVersionKind{Group: "security.openshift.io", Version: "v1", Kind: "SecurityContextConstraints"})
	scc.SetName("efs-csi-scc")
	scc.SetLabels(map[string]string{communityLabel: "true"})
	objects := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: meta(ns, "efs-csi-sa")},
		scc,
		&storagev1.CSIDriver{ObjectMeta: meta("", "efs.csi.aws.com"), Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(false)}},
		&storagev1.StorageClass{ObjectMeta: meta("", "efs-sc"), Provisioner: "efs.csi.aws.com", ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)},
		&appsv1.DaemonSet{
			ObjectMeta: meta(ns, "efs-csi-node"),
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: podLabels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
					Spec: corev1.PodSpec{
						ServiceAccountName: "efs-csi-sa",
						NodeSelector:       map[string]string{"node-role.kubernetes.io/worker": ""},
						HostNetwork:        true,
						Containers: []corev1.Container{
							{Name: "efs-plugin", Image: "amazon/aws-efs-csi-driver:v1.0.0", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}},
							{Name: "csi-driver-registrar", Image: "quay.io/k8scsi/csi-node-driver-registrar:v1.3.0"},
							{Name: "liveness-probe", Image: "quay.io/k8scsi/livenessprobe:v2.0.0", Ports: []corev1.ContainerPort{{ContainerPort: 9809, HostPort: 9809}}},
						},
					},
				},
			},
		},
	}
	for _, o := range objects {
		must(t, h.c.Create(ctx, o))
	}
	must(t, eventually(ctx, "the community DaemonSet to run", h.available(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}})))
	return objects
}

// seedSharedVolume creates a bound PV and PVC the way the community SharedVolume controller did.
func seedSharedVolume(ctx context.Context, t *testing.T, h *harness, namespace, name string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	t.Helper()
	labels := map[string]string{
		"openshift.io/aws-efs-operator-shared-volume-owner-namespace": namespace,
		"openshift.io/aws-efs-operator-shared-volume-owner-name":      name,
		communityLabel: "true",
	}
	must(t, h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	pv := efsPV("pv-" + namespace + "-" + name)
	pv.Labels = labels
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pvc-" + name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To("efs-sc"),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	must(t, h.c.Create(ctx, pv))
	must(t, h.c.Create(ctx, pvc))
	must(t, eventually(ctx, "the PVC to bind", func(ctx context.Context) error {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return err
		}
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(pv), pv); err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound || pv.Status.Phase != corev1.VolumeBound {
			return fmt.Errorf("PVC %s, PV %s", pvc.Status.Phase, pv.Status.Phase)
		}
		return nil
	}))
	return pv, pvc
}

func TestAdoptsTheCommunityDriverInPlace(t *testing.T) {
	setImages(t)
	h := newHarness(t, testbed.Full, testbed.OpenShiftOptions{CredentialsMode: operatorv1.CloudCredentialsModeManual})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
	// Without the CR the operator leaves the community driver alone.
	time.Sleep(2 * time.Second)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "efs-csi-node"}}
	must(t, h.c.Get(ctx, client.ObjectKeyFromObject(ds), ds))
	if ds.Spec.Template.Spec.Containers[0].Image != "amazon/aws-efs-csi-driver:v1.0.0" {
		t.Fatalf("the DaemonSet changed before the CR existed: %s", ds.Spec.Template.Spec.Containers[0].Image)
	}

	h.createCR(ctx, operator.CRName, operatorv1.Managed)
	must(t, eventually(ctx, "the DaemonSet to run the supported driver", func(ctx context.Context) error {
		if err := h.available(ds)(ctx); err != nil {
			return err
		}
		if img := ds.Spec.Template.Spec.Containers[0].Image; img != images["DRIVER_IMAGE"] {
			return fmt.Errorf("image %s", img)
		}
		return nil
	}))
	scc := community[1]
	must(t, eventually(ctx, "the community SCC to go", h.gone(scc)))
	must(t, eventually(ctx, "adoption to settle", h.conditionIs("AWSEFSDriverAdoptionProgressing", operatorv1.ConditionFalse)))

	adopted := append(community[:1:1], community[2:]...) // all but the SCC
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

	// Deleting the SharedVolume CRD no longer garbage-collects the driver.
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "sharedvolumes.aws-efs.managed.openshift.io"}}
	must(t, h.c.Delete(ctx, crd))
	must(t, eventually(ctx, "the CRD to go", h.gone(crd)))
	time.Sleep(3 * time.Second)
	for _, o := range adopted {
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil || o.GetDeletionTimestamp() != nil {
			t.Errorf("%T %s was collected with the CRD: %v", o, o.GetName(), err)
		}
	}
}
