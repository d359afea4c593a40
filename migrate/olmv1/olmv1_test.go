package olmv1

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	blang "github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/images"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olmv1api"
	"github.com/csi-olm/csi-olm/migrate"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The marks the move puts on an object come off on the way back, and only those: another Helm
// release's object, and the object's own labels and annotations, are left as they were.
func TestMarkAndUnmark(t *testing.T) {
	plan := &Plan{Extension: "aws-efs-operator", Namespace: "openshift-cluster-csi-drivers"}
	for _, tc := range []struct {
		name   string
		before *unstructured.Unstructured
	}{
		{"bare", object(nil, nil, nil)},
		{"with its own labels and annotations", object(map[string]string{"app": "x"}, map[string]string{"note": "y"}, nil)},
		{"owned by OLM v0's CSV", object(nil, nil, []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion", Name: "csv", UID: "u1"}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.before.DeepCopy()
			mark(u, plan)
			if u.GetLabels()[olmv1api.ManagedByLabel] != olmv1api.ManagedByHelm || u.GetAnnotations()[olmv1api.ReleaseNameAnnotation] != plan.Extension ||
				u.GetAnnotations()[olmv1api.ReleaseNamespaceAnnotation] != plan.Namespace {
				t.Fatalf("marked: labels %v, annotations %v", u.GetLabels(), u.GetAnnotations())
			}
			// What operator-controller adds when it adopts the object goes on the way back too.
			labels := u.GetLabels()
			labels[olmv1api.OwnerKindLabel], labels[olmv1api.OwnerNameLabel] = olmv1api.ClusterExtensionGVK.Kind, plan.Extension
			u.SetLabels(labels)
			u.SetOwnerReferences(append(u.GetOwnerReferences(), metav1.OwnerReference{APIVersion: "olm.operatorframework.io/v1", Kind: "ClusterExtension", Name: plan.Extension, UID: "u2"}))
			unmark(u, plan)
			if !equality.Semantic.DeepEqual(emptyToNil(u), emptyToNil(tc.before)) {
				t.Errorf("unmarked:\n%v\nwant:\n%v", u.Object, tc.before.Object)
			}
		})
	}
	other := object(map[string]string{olmv1api.ManagedByLabel: olmv1api.ManagedByHelm}, map[string]string{olmv1api.ReleaseNameAnnotation: "another", olmv1api.ReleaseNamespaceAnnotation: "x"}, nil)
	u := other.DeepCopy()
	unmark(u, plan)
	if u.GetAnnotations()[olmv1api.ReleaseNameAnnotation] != "another" {
		t.Errorf("unmark took another release's marks off: %v", u.GetAnnotations())
	}
}

func object(labels, annotations map[string]string, owners []metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("openshift-cluster-csi-drivers")
	u.SetName("aws-efs-csi-driver-operator")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	u.SetOwnerReferences(owners)
	return u
}

// emptyToNil drops empty metadata maps and lists, which mean what their absence means.
func emptyToNil(u *unstructured.Unstructured) map[string]any {
	out := u.DeepCopy()
	for _, field := range []string{"labels", "annotations", "ownerReferences"} {
		if v, ok, _ := unstructured.NestedFieldNoCopy(out.Object, "metadata", field); ok {
			if m, isMap := v.(map[string]any); (isMap && len(m) == 0) || v == nil {
				unstructured.RemoveNestedField(out.Object, "metadata", field)
			}
			if l, isList := v.([]any); isList && len(l) == 0 {
				unstructured.RemoveNestedField(out.Object, "metadata", field)
			}
		}
	}
	return out.Object
}

// A plan read from a journal names each reason it cannot be acted on.
func TestPlanProblems(t *testing.T) {
	good := Plan{
		Package: "aws-efs-operator", Namespace: "ns", Subscription: Object{Name: "sub"}, CSV: Object{Name: "csv", UID: "u"},
		SubscriptionSpec: operatorsv1alpha1.SubscriptionSpec{Package: "aws-efs-operator"}, Version: "4.10.0", Catalog: "certified",
		Extension: "aws-efs-operator", ServiceAccount: "sa", OperatorGroup: "og",
		Adopted: []Object{{Kind: "Deployment", Namespace: "ns", Name: "op", UID: "u3"}},
	}
	if p := good.Problems("ns", "aws-efs-operator"); len(p) != 0 {
		t.Errorf("a good plan: %v", p)
	}
	bad := good
	bad.Version, bad.SubscriptionSpec.Package = "", "other"
	bad.Adopted = []Object{{Kind: "Deployment", Name: "op"}}
	problems := strings.Join(bad.Problems("elsewhere", "aws-efs-operator"), "\n")
	for _, want := range []string{
		"it records an install in namespace ns, but a journal lives in the install's namespace, elsewhere",
		"it has no version",
		`its subscriptionSpec, the Subscription the way back creates again, is of package "other"`,
		"lacks a kind, a name or a UID",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("the problems lack %q:\n%s", want, problems)
		}
	}
}

// The verb refuses, before changing anything, what OLM v1 could not take over, and names every
// reason at once: a ClusterCatalog that does not exist and a missing installer ServiceAccount;
// then a ClusterCatalog, read from the image catalogd resolved, that serves other versions than
// the one OLM v0 runs. The OLM v0 install and the ClusterCatalog are objects on a real API
// server, as OLM and catalogd leave them.
func TestRefusesBeforeChangingAnything(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer, testutil.WithTools(t, "olm-crds", "olmv1-crds"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := s.Client
	for _, dir := range []string{s.Tools().OLMCRDs, s.Tools().OLMv1CRDs} {
		crds, err := testbed.ReadCRDDir(dir)
		must(t, err)
		must(t, testbed.InstallCRDs(ctx, c, crds...))
	}
	const ns = "openshift-cluster-csi-drivers"
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ns}}))
	csv := &operatorsv1alpha1.ClusterServiceVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-efs-csi-driver-operator.v4.8.0"},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: "AWS EFS CSI Driver Operator", Version: version.OperatorVersion{Version: blang.MustParse("4.8.0")},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{
				StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{}},
			},
		},
	}
	must(t, c.Create(ctx, csv))
	csv.Status.Phase = operatorsv1alpha1.CSVPhaseSucceeded
	must(t, c.Status().Update(ctx, csv))
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-efs-operator"},
		Spec:       &operatorsv1alpha1.SubscriptionSpec{Package: "aws-efs-operator", Channel: "stable", CatalogSource: "certified", CatalogSourceNamespace: "openshift-marketplace"},
	}
	must(t, c.Create(ctx, sub))
	sub.Status = operatorsv1alpha1.SubscriptionStatus{InstalledCSV: csv.Name, State: operatorsv1alpha1.SubscriptionStateAtLatest, LastUpdated: metav1.Now()}
	must(t, c.Status().Update(ctx, sub))

	run := func(catalog string) (string, error) {
		var out bytes.Buffer
		m := &Migrate{
			Options: migrate.Options{ClusterOptions: kube.ClusterOptions{Config: s.Config, DryRun: true}, Output: "text", Timeout: time.Minute, Out: &out, Progress: &out},
			Package: "aws-efs-operator", Catalog: catalog,
		}
		err := m.Run(load.WithRegistry(ctx, load.Registry{UseHTTP: true}))
		return out.String(), err
	}
	_, err := run("certified")
	for _, want := range []string{
		"cannot move aws-efs-operator to OLM v1, so nothing was changed:",
		"ClusterCatalog certified does not exist (kubectl get clustercatalogs)",
		"ServiceAccount openshift-cluster-csi-drivers/aws-efs-operator-installer, which OLM v1 installs with, does not exist",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without a ClusterCatalog and an installer: %v, want %q", err, want)
		}
	}

	tagged := testutil.PushCatalogImage(t, filepath.Join("..", "..", "catalog", "certified", "v4.11"), images.CatalogConfig(v1.Platform{OS: "linux", Architecture: "amd64"}), "v4.11")
	// catalogd resolves the image to its digest, and serves that.
	ref, err := name.ParseReference(tagged, name.Insecure)
	must(t, err)
	desc, err := remote.Head(ref)
	must(t, err)
	image := ref.Context().Digest(desc.Digest.String()).String()
	cc := &unstructured.Unstructured{}
	cc.SetGroupVersionKind(olmv1api.ClusterCatalogGVK)
	cc.SetName("certified")
	must(t, unstructured.SetNestedMap(cc.Object, map[string]any{"type": "Image", "image": map[string]any{"ref": image}}, "spec", "source"))
	must(t, c.Create(ctx, cc))
	must(t, unstructured.SetNestedField(cc.Object, map[string]any{
		"conditions":     []any{map[string]any{"type": "Serving", "status": "True", "reason": "Available", "message": "serving", "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}},
		"resolvedSource": map[string]any{"type": "Image", "image": map[string]any{"ref": image}},
	}, "status"))
	must(t, c.Status().Update(ctx, cc))
	must(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "aws-efs-operator-installer"}}))
	_, err = run("certified")
	served := "ClusterCatalog certified (" + image + ") serves only version 4.11.0 of package aws-efs-operator, not 4.8.0, the installed one"
	// The installer exists but may do nothing: each resource it lacks is one line, with its verbs.
	lacks := "ServiceAccount openshift-cluster-csi-drivers/aws-efs-operator-installer may not get, create, update, patch, delete clusterroles.rbac.authorization.k8s.io in every namespace, which OLM v1 does installing the bundle"
	for _, want := range []string{served, lacks} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("from a catalog without the installed version: %v, want %q", err, want)
		}
	}
	// Nothing changed: the Subscription is there, and no journal was written.
	must(t, c.Get(ctx, client.ObjectKeyFromObject(sub), sub))
	var journals corev1.ConfigMapList
	must(t, c.List(ctx, &journals, client.InNamespace(ns)))
	for _, cm := range journals.Items {
		if strings.HasPrefix(cm.Name, "csi-olm-migrate-") {
			t.Errorf("a refused dry run wrote journal %s", cm.Name)
		}
	}
}

// The owner a move deletes goes only once every other finalizer is done and no object the plan
// keeps names it: the migration takes the references off itself rather than trust the garbage
// collector, whose orphaning misses a dependent its informers have not seen yet (or one the
// owner's controller wrote again meanwhile) and which then deletes it as an orphan. The test bed
// runs no garbage collector: the test plays one that orphaned nothing and only took its finalizer
// off, so what the references become is the migration's doing alone.
func TestOrphanDeleteFreesWhatItKeeps(t *testing.T) {
	s := testutil.StartTestBed(t, testbed.APIServer)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := s.Client
	const ns = "default"
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	must(t, c.Create(ctx, owner))
	ref := func(name string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: name, UID: uid, Controller: ptr.To(name == owner.Name), BlockOwnerDeletion: ptr.To(true)}
	}
	other := ref("other", "0b1a0e5e-0000-4000-8000-000000000001")
	kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept", OwnerReferences: []metav1.OwnerReference{ref(owner.Name, owner.UID)}}}
	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared", OwnerReferences: []metav1.OwnerReference{other, ref(owner.Name, owner.UID)}}}
	must(t, c.Create(ctx, kept))
	must(t, c.Create(ctx, shared))
	objects := []Object{
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: kept.Name, UID: kept.UID},
		{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: shared.Name, UID: shared.UID},
		{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "never-made", UID: "0b1a0e5e-0000-4000-8000-000000000002"},
	}
	done := make(chan error, 1)
	go func() { done <- orphanDelete(ctx, c, owner.DeepCopy(), "ConfigMap owner", objects, 30*time.Second) }()

	// While the garbage collector's finalizer stands, the owner is held and nothing is freed.
	live := &corev1.ConfigMap{}
	must(t, testutil.Eventually(ctx, "the owner held and deleted with the orphan policy", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(owner), live); err != nil {
			return err
		}
		if want := []string{holdFinalizer, metav1.FinalizerOrphanDependents}; live.DeletionTimestamp == nil || !slices.Equal(live.Finalizers, want) {
			return fmt.Errorf("deletion %v, finalizers %v, want %v", live.DeletionTimestamp, live.Finalizers, want)
		}
		return nil
	}))
	time.Sleep(time.Second)
	must(t, c.Get(ctx, client.ObjectKeyFromObject(kept), kept))
	if len(kept.OwnerReferences) != 1 {
		t.Errorf("references taken off before the other finalizers were done: %v", kept.OwnerReferences)
	}
	live.Finalizers = []string{holdFinalizer}
	must(t, c.Update(ctx, live))

	must(t, <-done)
	if err := c.Get(ctx, client.ObjectKeyFromObject(owner), live); !apierrors.IsNotFound(err) {
		t.Errorf("the owner is not gone: %v, finalizers %v", err, live.Finalizers)
	}
	must(t, c.Get(ctx, client.ObjectKeyFromObject(kept), kept))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(shared), shared))
	if len(kept.OwnerReferences) != 0 || !equality.Semantic.DeepEqual(shared.OwnerReferences, []metav1.OwnerReference{other}) {
		t.Errorf("owner references left: %v on the ConfigMap (want none), %v on the Secret (want only %s's)", kept.OwnerReferences, shared.OwnerReferences, other.Name)
	}
}
