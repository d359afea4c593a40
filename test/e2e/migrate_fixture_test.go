package e2e

import (
	"context"
	"fmt"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ebsv1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/ebsdriver/v1alpha1"
	manilav1alpha1 "github.com/csi-olm/csi-olm/bundle/drivers/maniladriver/v1alpha1"
	"github.com/csi-olm/csi-olm/internal/names/ebs"
	"github.com/csi-olm/csi-olm/internal/names/manila"
	"github.com/csi-olm/csi-olm/internal/olm"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
	"github.com/csi-olm/csi-olm/test/fixture"
	"github.com/csi-olm/csi-olm/testbed"
)

// communityEFS is a cluster running the community aws-efs-operator v0.0.8, installed by
// Subscription, with its driver and three Ready SharedVolumes, each with a bound PV and PVC.
type communityEFS struct {
	*olmFixture
	driver  *appsv1.DaemonSet
	volumes []sharedVolume
}

type sharedVolume struct {
	sv  *sharedvolumev1alpha1.SharedVolume
	pv  *corev1.PersistentVolume
	pvc *corev1.PersistentVolumeClaim
}

func installCommunityEFS(ctx context.Context, t testing.TB, f *olmFixture) *communityEFS {
	t.Helper()
	c, ns := f.stack.Client, testbed.OperatorsNamespace
	f.installCommunity(ctx, t)
	objects, err := fixture.CommunityDriver(ctx, c, ns)
	must(t, err)
	e := &communityEFS{olmFixture: f, driver: objects[len(objects)-1].(*appsv1.DaemonSet)}
	for i := 1; i <= 3; i++ {
		namespace, name := fmt.Sprintf("app-%d", i), "data"
		pv, pvc, err := fixture.BoundVolume(ctx, c, namespace, name)
		must(t, err)
		sv := &sharedvolumev1alpha1.SharedVolume{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       sharedvolumev1alpha1.SharedVolumeSpec{FileSystemID: "fs-0123", AccessPointID: fmt.Sprintf("fsap-%04d", i)},
		}
		must(t, c.Create(ctx, sv))
		sv.Status = sharedvolumev1alpha1.SharedVolumeStatus{
			Phase:    sharedvolumev1alpha1.SharedVolumeReady,
			ClaimRef: &corev1.TypedLocalObjectReference{APIGroup: ptr.To(""), Kind: "PersistentVolumeClaim", Name: pvc.Name},
		}
		must(t, c.Status().Update(ctx, sv))
		e.volumes = append(e.volumes, sharedVolume{sv: sv, pv: pv, pvc: pvc})
	}
	return e
}

// assertVolumesUntouched checks every PV and PVC kept its UID and binding.
func (e *communityEFS) assertVolumesUntouched(ctx context.Context, t testing.TB) {
	t.Helper()
	c := e.stack.Client
	for _, v := range e.volumes {
		var pv corev1.PersistentVolume
		var pvc corev1.PersistentVolumeClaim
		must(t, c.Get(ctx, client.ObjectKeyFromObject(v.pv), &pv))
		must(t, c.Get(ctx, client.ObjectKeyFromObject(v.pvc), &pvc))
		if pv.UID != v.pv.UID || pvc.UID != v.pvc.UID {
			t.Errorf("PV %s or PVC %s/%s was re-created", pv.Name, pvc.Namespace, pvc.Name)
		}
		if pvc.Spec.VolumeName != pv.Name || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID ||
			pv.Status.Phase != corev1.VolumeBound || pvc.Status.Phase != corev1.ClaimBound {
			t.Errorf("PV %s and PVC %s/%s are no longer bound to each other: %s/%s", pv.Name, pvc.Namespace, pvc.Name, pv.Status.Phase, pvc.Status.Phase)
		}
	}
}

// assertSwitched checks the end state of `migrate subscription`.
func (e *communityEFS) assertSwitched(ctx context.Context, t testing.TB) {
	t.Helper()
	c, ns := e.stack.Client, testbed.OperatorsNamespace
	var sub operatorsv1alpha1.Subscription
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: efsPackage}, &sub))
	if sub.Spec.CatalogSource != certifiedSource || sub.Spec.CatalogSourceNamespace != testbed.OLMNamespace || sub.Spec.Channel != "stable" || sub.Spec.Package != efsPackage {
		t.Errorf("Subscription spec after the migration: %+v", sub.Spec)
	}
	if !olm.AtLatestKnown(certifiedHeadCSV)(&sub) {
		t.Errorf("Subscription is not AtLatestKnown %s:\n%s", certifiedHeadCSV, olm.DescribeSubscription(&sub, nil))
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: certifiedHeadCSV}, &csv))
	if csv.Status.Phase != operatorsv1alpha1.CSVPhaseSucceeded {
		t.Errorf("CSV %s is %s", csv.Name, csv.Status.Phase)
	}
	var ds appsv1.DaemonSet
	must(t, c.Get(ctx, client.ObjectKeyFromObject(e.driver), &ds))
	if ds.UID != e.driver.UID {
		t.Error("the driver DaemonSet was re-created")
	}
	for _, v := range e.volumes {
		var sv sharedvolumev1alpha1.SharedVolume
		must(t, c.Get(ctx, client.ObjectKeyFromObject(v.sv), &sv))
		if sv.Status.Phase != sharedvolumev1alpha1.SharedVolumeReady {
			t.Errorf("SharedVolume %s/%s is %s", sv.Namespace, sv.Name, sv.Status.Phase)
		}
	}
	e.assertVolumesUntouched(ctx, t)
	assertJournalCompleted(ctx, t, c, "subscription", efsPackage)
}

func assertJournalCompleted(ctx context.Context, t testing.TB, c client.Client, verb, target string) {
	t.Helper()
	var cm corev1.ConfigMap
	must(t, c.Get(ctx, client.ObjectKey{Namespace: testbed.OperatorsNamespace, Name: "csi-olm-migrate-" + verb + "-" + target}, &cm))
	if cm.Data["phase"] != "Completed" {
		t.Errorf("the journal is %q:\n%s", cm.Data["phase"], cm.Data["log"])
	}
}

// olmEraDriver is an OLM-era (4.5) EBS or Manila operator installed by Subscription, with its
// CR, finalizer and operands seeded under the 4.5 names.
type olmEraDriver struct {
	name, pkg, channel, csv, deployment string
	clusterCSIDriver                    string
	cr                                  client.Object
	finalizer                           string
	operands                            []client.Object
}

var managed = operatorv1.OperatorSpec{ManagementState: operatorv1.Managed, LogLevel: operatorv1.Normal, OperatorLogLevel: operatorv1.Normal}

func olmEraDrivers() []*olmEraDriver {
	return []*olmEraDriver{{
		name: "ebs", pkg: ebs.Package, channel: "preview", csv: "aws-ebs-csi-driver-operator.v4.5.0", deployment: ebs.OperatorName,
		clusterCSIDriver: ebs.CSIDriver,
		cr:               &ebsv1alpha1.AWSEBSDriver{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: ebsv1alpha1.AWSEBSDriverSpec{OperatorSpec: managed}}, finalizer: ebsv1alpha1.Finalizer,
		operands: operandsOf(ebs.OperandNamespace, ebs.CSIDriver, "gp2-csi", []string{ebs.ControllerName}, []string{ebs.NodeName}),
	}, {
		name: "manila", pkg: manila.Package, channel: "stable", csv: "manila-csi-driver-operator.v4.5.0", deployment: manila.OperatorName,
		clusterCSIDriver: manila.CSIDriver,
		cr:               &manilav1alpha1.ManilaDriver{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: manilav1alpha1.ManilaDriverSpec{OperatorSpec: managed}}, finalizer: manilav1alpha1.Finalizer,
		operands: operandsOf(manila.OperandNamespace, manila.CSIDriver, "csi-manila-default", []string{manila.ControllerName}, []string{manila.NodeName, manila.NFSNodeName}),
	}}
}

func operandsOf(namespace, csiDriver, storageClass string, deployments, daemonSets []string) []client.Object {
	template := func(name string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "csi-driver", Image: "quay.io/openshift/origin-" + name + ":4.5"}}},
		}
	}
	selector := func(name string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "cloud-credentials"}, StringData: map[string]string{"key": "value"}},
		&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: csiDriver}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: storageClass}, Provisioner: csiDriver},
	}
	for _, name := range deployments {
		objects = append(objects, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: selector(name), Template: template(name)},
		})
	}
	for _, name := range daemonSets {
		objects = append(objects, &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       appsv1.DaemonSetSpec{Selector: selector(name), Template: template(name)},
		})
	}
	return objects
}

// installOLMEraDrivers installs each driver's 4.5 bundle from the certified catalog of 4.5 and seeds
// its CR, with the old operator's finalizer, and its operands.
func installOLMEraDrivers(ctx context.Context, t testing.TB, f *olmFixture, drivers ...*olmEraDriver) {
	t.Helper()
	c, ns := f.stack.Client, testbed.OperatorsNamespace
	for _, d := range drivers {
		must(t, f.subscribe(ctx, d.pkg, d.channel, olmEraSource))
	}
	for _, d := range drivers {
		_, err := testbed.WaitForSubscription(ctx, c, ns, d.pkg, "AtLatestKnown "+d.csv, olm.AtLatestKnown(d.csv))
		must(t, err)
		must(t, testbed.WaitForCSV(ctx, c, ns, d.csv, operatorsv1alpha1.CSVPhaseSucceeded))
		must(t, testbed.WaitForDeploymentAvailable(ctx, c, ns, d.deployment))
		d.cr.SetFinalizers([]string{d.finalizer})
		must(t, c.Create(ctx, d.cr))
		for _, o := range d.operands {
			must(t, c.Create(ctx, o))
		}
	}
}

// assertHandedOver checks the end state of `migrate cso`.
func (d *olmEraDriver) assertHandedOver(ctx context.Context, t testing.TB, c client.Client) {
	t.Helper()
	ns := testbed.OperatorsNamespace
	goneObjects := map[string]client.Object{
		"Subscription":             &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.pkg}},
		"CSV":                      &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.csv}},
		"operator Deployment":      &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: d.deployment}},
		"old CR " + d.cr.GetName(): d.cr.DeepCopyObject().(client.Object),
	}
	for what, o := range goneObjects {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err == nil {
			t.Errorf("the %s is still there (finalizers %v, deleting %v)", what, o.GetFinalizers(), o.GetDeletionTimestamp() != nil)
		}
	}
	for _, want := range d.operands {
		got := want.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			t.Errorf("operand %T %s: %v", want, want.GetName(), err)
		} else if got.GetUID() != want.GetUID() || got.GetDeletionTimestamp() != nil {
			t.Errorf("operand %T %s was re-created or is being deleted", want, want.GetName())
		}
	}
	var ccd operatorv1.ClusterCSIDriver
	if err := c.Get(ctx, client.ObjectKey{Name: d.clusterCSIDriver}, &ccd); err != nil {
		t.Errorf("ClusterCSIDriver %s: %v", d.clusterCSIDriver, err)
	}
	assertJournalCompleted(ctx, t, c, "cso", d.name)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
