package olmv1

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/lint"
	"github.com/csi-olm/csi-olm/catalog/load"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv1"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olmv1api"
)

// OLM v0's marks on what it made for a CSV where an owner reference cannot point at it
// (cluster-scoped objects).
const (
	olmOwnerLabel          = "olm.owner"
	olmOwnerNamespaceLabel = "olm.owner.namespace"
	olmOwnerKindLabel      = "olm.owner.kind"
)

// operatorConditionGVK is OLM v0's OperatorCondition, which it makes for every CSV.
var operatorConditionGVK = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v2", Kind: "OperatorCondition"}

// clusterCSIDriverGVK is OpenShift's ClusterCSIDriver, read only when the cluster serves it.
var clusterCSIDriverGVK = schema.GroupVersionKind{Group: "operator.openshift.io", Version: "v1", Kind: "ClusterCSIDriver"}

// plan reads the OLM v0 install of sub and everything the migration must keep, and refuses,
// before anything changes, an install OLM v1 cannot take over.
func (m *Migrate) plan(ctx context.Context, c client.Client, kc kubernetes.Interface, sub *operatorsv1alpha1.Subscription) (*Plan, error) {
	ref := sub.Namespace + "/" + sub.Name
	switch {
	case sub.Status.InstalledCSV == "":
		return nil, fmt.Errorf("Subscription %s has not installed a CSV yet: there is no install to move; nothing was changed", ref)
	case sub.Status.State == operatorsv1alpha1.SubscriptionStateUpgradePending:
		return nil, fmt.Errorf("Subscription %s has an upgrade pending (InstallPlan %s): let it finish, then run again; nothing was changed", ref, installPlanName(sub))
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := c.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: sub.Status.InstalledCSV}, &csv); err != nil {
		return nil, fmt.Errorf("reading the installed CSV %s/%s of Subscription %s: %w", sub.Namespace, sub.Status.InstalledCSV, ref, err)
	}
	if csv.Status.Phase != operatorsv1alpha1.CSVPhaseSucceeded {
		return nil, fmt.Errorf("CSV %s/%s is %s, not Succeeded (%s): OLM v1 would take over an install that does not work; fix it first; nothing was changed",
			csv.Namespace, csv.Name, csv.Status.Phase, csv.Status.Message)
	}
	plan := &Plan{
		Package: m.Package, Namespace: sub.Namespace,
		Subscription:     Object{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.SubscriptionKind, Namespace: sub.Namespace, Name: sub.Name, UID: sub.UID},
		SubscriptionSpec: *sub.Spec,
		CSV:              Object{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.ClusterServiceVersionKind, Namespace: csv.Namespace, Name: csv.Name, UID: csv.UID},
		Version:          csv.Spec.Version.String(),
		Catalog:          m.Catalog,
		Extension:        m.extensionName(),
		ServiceAccount:   m.serviceAccountName(),
		RecordedAt:       time.Now().UTC().Truncate(time.Second),
	}
	var refusals []string
	refuse := func(format string, args ...any) { refusals = append(refusals, fmt.Sprintf(format, args...)) }

	if err := m.planOperatorGroup(ctx, c, plan, refuse); err != nil {
		return nil, err
	}
	if err := checkNoExtension(ctx, c, plan, refuse); err != nil {
		return nil, err
	}
	cfg, err := m.planCatalog(ctx, c, plan, refuse)
	if err != nil {
		return nil, err
	}
	if plan.BundleImage != "" {
		dir, err := os.MkdirTemp("", "csi-olm-bundle-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := load.BundleDir(ctx, plan.BundleImage, dir); err != nil {
			return nil, fmt.Errorf("reading the bundle OLM v1 would install: %w", err)
		}
		for _, p := range lint.OLMv1(dir) {
			if p.Level == lint.Error {
				refuse("OLM v1 cannot install bundle %s (rule %s): %s", plan.BundleImage, p.Validator, p.Message)
			}
		}
		objs, err := lint.OLMv1Objects(dir)
		if err != nil {
			return nil, err
		}
		if err := planAdopted(ctx, c, plan, &csv, objs, refuse); err != nil {
			return nil, err
		}
	}
	if err := m.checkInstaller(ctx, c, kc, plan, refuse); err != nil {
		return nil, err
	}
	if len(refusals) > 0 {
		return nil, fmt.Errorf("cannot move %s to OLM v1, so nothing was changed:\n  - %s", m.Package, strings.Join(refusals, "\n  - "))
	}
	if err := planRetired(ctx, c, plan); err != nil {
		return nil, err
	}
	if err := planUnchanged(ctx, c, plan); err != nil {
		return nil, err
	}
	if err := planCensuses(ctx, c, plan, &csv); err != nil {
		return nil, err
	}
	plan.NextUpgrade = nextUpgrade(plan, cfg)
	return plan, nil
}

func installPlanName(sub *operatorsv1alpha1.Subscription) string {
	if sub.Status.InstallPlanRef != nil {
		return sub.Status.InstallPlanRef.Name
	}
	return "unknown"
}

func (m *Migrate) extensionName() string {
	if m.Extension != "" {
		return m.Extension
	}
	return m.Package
}

func (m *Migrate) serviceAccountName() string {
	if m.ServiceAccount != "" {
		return m.ServiceAccount
	}
	return m.extensionName() + "-installer"
}

// planOperatorGroup records the namespace's OperatorGroup, which stays for the way back, and
// warns when OLM v0 ran the operator for fewer namespaces than OLM v1 will: OLM v1 installs a
// registry+v1 bundle for all namespaces.
func (m *Migrate) planOperatorGroup(ctx context.Context, c client.Client, plan *Plan, refuse func(string, ...any)) error {
	var ogs operatorsv1.OperatorGroupList
	if err := c.List(ctx, &ogs, client.InNamespace(plan.Namespace)); err != nil {
		return fmt.Errorf("reading the OperatorGroup of namespace %s: %w", plan.Namespace, err)
	}
	if len(ogs.Items) != 1 {
		refuse("namespace %s has %d OperatorGroups, where OLM v0 runs an operator only with exactly one", plan.Namespace, len(ogs.Items))
		return nil
	}
	og := ogs.Items[0]
	plan.OperatorGroup = og.Name
	if targets := og.Status.Namespaces; !(len(targets) == 1 && targets[0] == metav1.NamespaceAll) {
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("OperatorGroup %s/%s runs the operator for namespaces %s only; OLM v1 installs it for all namespaces",
			plan.Namespace, og.Name, strings.Join(targets, ", ")))
	}
	return nil
}

// checkNoExtension refuses when OLM v1 already installs the package, or a ClusterExtension has
// the name the migration would give its own.
func checkNoExtension(ctx context.Context, c client.Client, plan *Plan, refuse func(string, ...any)) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(olmv1api.ClusterExtensionGVK.GroupVersion().WithKind(olmv1api.ClusterExtensionGVK.Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			refuse("the cluster does not serve OLM v1's ClusterExtension API (%s): install OLM v1 first", olmv1api.ClusterExtensionGVK.GroupVersion())
			return nil
		}
		return fmt.Errorf("listing ClusterExtensions: %w", err)
	}
	for _, ce := range list.Items {
		pkg, _, _ := unstructured.NestedString(ce.Object, "spec", "source", "catalog", "packageName")
		switch {
		case ce.GetName() == plan.Extension:
			refuse("ClusterExtension %s exists already (package %s): name another with --extension, or delete it", ce.GetName(), pkg)
		case pkg == plan.Package:
			refuse("ClusterExtension %s installs package %s already: OLM v0 and OLM v1 would both install it", ce.GetName(), pkg)
		}
	}
	return nil
}

// planCatalog reads the content of the named ClusterCatalog, the image catalogd serves by
// digest, and finds the bundle of the installed version in it.
func (m *Migrate) planCatalog(ctx context.Context, c client.Client, plan *Plan, refuse func(string, ...any)) (*declcfg.DeclarativeConfig, error) {
	cc := &unstructured.Unstructured{}
	cc.SetGroupVersionKind(olmv1api.ClusterCatalogGVK)
	switch err := c.Get(ctx, client.ObjectKey{Name: plan.Catalog}, cc); {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		refuse("ClusterCatalog %s does not exist (kubectl get clustercatalogs)", plan.Catalog)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ClusterCatalog %s: %w", plan.Catalog, err)
	}
	if !conditionTrue(cc, "Serving") {
		refuse("ClusterCatalog %s is not Serving: %s", plan.Catalog, conditionMessage(cc, "Serving"))
		return nil, nil
	}
	image, _, _ := unstructured.NestedString(cc.Object, "status", "resolvedSource", "image", "ref")
	if image == "" {
		refuse("ClusterCatalog %s serves no image catalogd resolved (status.resolvedSource.image.ref)", plan.Catalog)
		return nil, nil
	}
	plan.CatalogImage = image
	loaded, err := load.Open(ctx, image)
	if err != nil {
		return nil, fmt.Errorf("reading ClusterCatalog %s's content: %w", plan.Catalog, err)
	}
	defer loaded.Close()
	cfg, err := declcfg.LoadFS(ctx, loaded.FS)
	if err != nil {
		return nil, fmt.Errorf("reading ClusterCatalog %s's content (%s): %w", plan.Catalog, image, err)
	}
	var versions []string
	for _, b := range cfg.Bundles {
		if b.Package != plan.Package {
			continue
		}
		props, err := property.Parse(b.Properties)
		if err != nil || len(props.Packages) == 0 {
			continue
		}
		v := props.Packages[0].Version
		versions = append(versions, v)
		if v == plan.Version {
			plan.BundleImage = b.Image
			if b.Name != plan.CSV.Name {
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("ClusterCatalog %s names version %s's bundle %s, not %s as the installed CSV is named", plan.Catalog, v, b.Name, plan.CSV.Name))
			}
		}
	}
	if plan.BundleImage == "" {
		sort.Slice(versions, func(i, j int) bool {
			a, errA := semver.NewVersion(versions[i])
			b, errB := semver.NewVersion(versions[j])
			if errA != nil || errB != nil {
				return versions[i] < versions[j]
			}
			return a.LessThan(b)
		})
		served := "no version"
		switch len(versions) {
		case 0:
		case 1:
			served = "only version " + versions[0]
		default:
			served = "versions " + strings.Join(versions, ", ")
		}
		refuse("ClusterCatalog %s (%s) serves %s of package %s, not %s, the installed one: OLM v1 would install another version; name a catalog that serves %s",
			plan.Catalog, image, served, plan.Package, plan.Version, plan.Version)
	}
	return cfg, nil
}

// planAdopted finds, of the objects OLM v1 will apply from the bundle, those that exist: OLM v1
// takes them over. They are the bundle's manifests and, of what OLM v1 generates from the CSV,
// the Deployments and ServiceAccounts, which keep their names under both OLMs (the RBAC does
// not: each OLM names it its own way).
func planAdopted(ctx context.Context, c client.Client, plan *Plan, csv *operatorsv1alpha1.ClusterServiceVersion, bundleObjs []*unstructured.Unstructured, refuse func(string, ...any)) error {
	var targets []*unstructured.Unstructured
	seen := map[string]bool{}
	add := func(u *unstructured.Unstructured) {
		key := u.GroupVersionKind().GroupKind().String() + "/" + u.GetName()
		if !seen[key] {
			seen[key] = true
			targets = append(targets, u)
		}
	}
	for _, o := range bundleObjs {
		if o.GetKind() != operatorsv1alpha1.ClusterServiceVersionKind {
			add(o)
		}
	}
	accounts := map[string]bool{}
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		dep.SetName(d.Name)
		add(dep)
		accounts[d.Spec.Template.Spec.ServiceAccountName] = true
	}
	for _, p := range slices.Concat(csv.Spec.InstallStrategy.StrategySpec.Permissions, csv.Spec.InstallStrategy.StrategySpec.ClusterPermissions) {
		accounts[p.ServiceAccountName] = true
	}
	for _, name := range slices.Sorted(maps.Keys(accounts)) {
		if name == "" || name == "default" {
			continue
		}
		sa := &unstructured.Unstructured{}
		sa.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
		sa.SetName(name)
		add(sa)
	}
	for _, t := range targets {
		namespaced, err := c.IsObjectNamespaced(t)
		if err != nil {
			refuse("the bundle's %s %s is of a kind the cluster does not serve (%v): OLM v1 could not apply it", t.GetKind(), t.GetName(), err)
			continue
		}
		if namespaced {
			t.SetNamespace(plan.Namespace)
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(t.GroupVersionKind())
		o := Object{APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Namespace: t.GetNamespace(), Name: t.GetName()}
		switch err := c.Get(ctx, client.ObjectKeyFromObject(t), live); {
		case apierrors.IsNotFound(err):
			plan.Created = append(plan.Created, o.String())
			continue
		case err != nil:
			return fmt.Errorf("reading %s: %w", o, err)
		}
		o.UID = live.GetUID()
		if release := live.GetAnnotations()[olmv1api.ReleaseNameAnnotation]; release != "" && release != plan.Extension {
			refuse("%s belongs to Helm release %s (annotation %s): OLM v1 cannot take it over for ClusterExtension %s", o, release, olmv1api.ReleaseNameAnnotation, plan.Extension)
		}
		if owner := metav1.GetControllerOf(live); owner != nil {
			refuse("%s is controlled by %s %s: OLM v1 makes itself its controller, and an object has only one", o, owner.Kind, owner.Name)
		}
		plan.Adopted = append(plan.Adopted, o)
	}
	return nil
}

// checkInstaller refuses when the ServiceAccount OLM v1 installs with is missing, or lacks a
// permission Helm needs on the objects of the bundle: operator-controller would fail halfway.
func (m *Migrate) checkInstaller(ctx context.Context, c client.Client, kc kubernetes.Interface, plan *Plan, refuse func(string, ...any)) error {
	var sa corev1.ServiceAccount
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.ServiceAccount}, &sa); {
	case apierrors.IsNotFound(err):
		refuse("ServiceAccount %s/%s, which OLM v1 installs with, does not exist: create it and grant it what the bundle needs (docs/olm-v1.md), or name another with --service-account",
			plan.Namespace, plan.ServiceAccount)
		return nil
	case err != nil:
		return fmt.Errorf("reading ServiceAccount %s/%s: %w", plan.Namespace, plan.ServiceAccount, err)
	}
	var permissions []kube.Permission
	seen := map[kube.Permission]bool{}
	need := func(gvk schema.GroupVersionKind, namespace string) {
		mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return // refused already, as a kind the cluster does not serve
		}
		for _, verb := range []string{"get", "create", "update", "patch", "delete"} {
			p := kube.Permission{Verb: verb, Group: gvk.Group, Resource: mapping.Resource.Resource, Namespace: namespace}
			if !seen[p] {
				seen[p] = true
				permissions = append(permissions, p)
			}
		}
	}
	for _, o := range plan.Adopted {
		need(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind), o.Namespace)
	}
	for _, kind := range []string{"Role", "RoleBinding"} {
		need(rbacv1.SchemeGroupVersion.WithKind(kind), plan.Namespace)
	}
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		need(rbacv1.SchemeGroupVersion.WithKind(kind), "")
	}
	missing, err := kube.Missing(ctx, kc, kube.ServiceAccount(plan.Namespace, plan.ServiceAccount), permissions)
	if err != nil {
		return err
	}
	// One line per resource, with every verb it lacks there.
	var order []kube.Permission
	verbs := map[kube.Permission][]string{}
	for _, p := range missing {
		key := p
		key.Verb = ""
		if _, ok := verbs[key]; !ok {
			order = append(order, key)
		}
		verbs[key] = append(verbs[key], p.Verb)
	}
	for _, key := range order {
		p := key
		p.Verb = strings.Join(verbs[key], ", ")
		refuse("ServiceAccount %s/%s may not %s, which OLM v1 does installing the bundle", plan.Namespace, plan.ServiceAccount, p)
	}
	return nil
}

// planRetired lists what OLM v0 made for the CSV alone: its RBAC under OLM v0's names, and its
// OperatorCondition. The move deletes them once OLM v1 grants the same.
func planRetired(ctx context.Context, c client.Client, plan *Plan) error {
	owned := client.MatchingLabels{olmOwnerLabel: plan.CSV.Name, olmOwnerNamespaceLabel: plan.Namespace}
	var crs rbacv1.ClusterRoleList
	var crbs rbacv1.ClusterRoleBindingList
	var roles rbacv1.RoleList
	var rbs rbacv1.RoleBindingList
	for _, l := range []struct {
		list client.ObjectList
		opts []client.ListOption
	}{{&crs, []client.ListOption{owned}}, {&crbs, []client.ListOption{owned}}, {&roles, []client.ListOption{client.InNamespace(plan.Namespace)}}, {&rbs, []client.ListOption{client.InNamespace(plan.Namespace)}}} {
		if err := c.List(ctx, l.list, l.opts...); err != nil {
			return fmt.Errorf("listing the RBAC of CSV %s: %w", plan.CSV.Name, err)
		}
	}
	rbac := rbacv1.SchemeGroupVersion.String()
	for _, o := range crs.Items {
		plan.Retired = append(plan.Retired, Object{APIVersion: rbac, Kind: "ClusterRole", Name: o.Name, UID: o.UID})
	}
	for _, o := range crbs.Items {
		plan.Retired = append(plan.Retired, Object{APIVersion: rbac, Kind: "ClusterRoleBinding", Name: o.Name, UID: o.UID})
	}
	for _, o := range roles.Items {
		if ownedBy(&o, plan.CSV.UID) {
			plan.Retired = append(plan.Retired, Object{APIVersion: rbac, Kind: "Role", Namespace: o.Namespace, Name: o.Name, UID: o.UID})
		}
	}
	for _, o := range rbs.Items {
		if ownedBy(&o, plan.CSV.UID) {
			plan.Retired = append(plan.Retired, Object{APIVersion: rbac, Kind: "RoleBinding", Namespace: o.Namespace, Name: o.Name, UID: o.UID})
		}
	}
	// OLM v0 gives a CSV an OperatorCondition; orphaned with the CSV, it would stay.
	conditions := &metav1.PartialObjectMetadataList{}
	conditions.SetGroupVersionKind(operatorConditionGVK.GroupVersion().WithKind(operatorConditionGVK.Kind + "List"))
	switch err := c.List(ctx, conditions, client.InNamespace(plan.Namespace)); {
	case meta.IsNoMatchError(err):
	case err != nil:
		return fmt.Errorf("listing the OperatorConditions of namespace %s: %w", plan.Namespace, err)
	default:
		for _, o := range conditions.Items {
			if ownedBy(&o, plan.CSV.UID) {
				plan.Retired = append(plan.Retired, Object{APIVersion: operatorConditionGVK.GroupVersion().String(), Kind: operatorConditionGVK.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID})
			}
		}
	}
	return nil
}

func ownedBy(o metav1.Object, uid types.UID) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

// planUnchanged records what the operator made and the migration must not touch: the
// namespace's other Deployments and DaemonSets (the driver), with the pods of each DaemonSet;
// the ClusterCSIDrivers; and the CSIDrivers of their names.
func planUnchanged(ctx context.Context, c client.Client, plan *Plan) error {
	adopted := map[string]bool{}
	for _, o := range plan.Adopted {
		adopted[o.Kind+"/"+o.Namespace+"/"+o.Name] = true
	}
	var deps appsv1.DeploymentList
	var dss appsv1.DaemonSetList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&deps, &dss, &pods} {
		if err := c.List(ctx, l, client.InNamespace(plan.Namespace)); err != nil {
			return fmt.Errorf("listing the operands in namespace %s: %w", plan.Namespace, err)
		}
	}
	apps := appsv1.SchemeGroupVersion.String()
	for _, d := range deps.Items {
		if !adopted["Deployment/"+d.Namespace+"/"+d.Name] {
			plan.Unchanged = append(plan.Unchanged, Object{APIVersion: apps, Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID})
		}
	}
	daemonSets := map[string]bool{}
	for _, ds := range dss.Items {
		plan.Unchanged = append(plan.Unchanged, Object{APIVersion: apps, Kind: "DaemonSet", Namespace: ds.Namespace, Name: ds.Name, UID: ds.UID})
		daemonSets[string(ds.UID)] = true
	}
	for _, p := range pods.Items {
		owner := metav1.GetControllerOf(&p)
		if owner == nil || owner.Kind != "DaemonSet" || !daemonSets[string(owner.UID)] || p.DeletionTimestamp != nil {
			continue
		}
		plan.NodePods = append(plan.NodePods, NodePod{
			Object:   Object{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			Restarts: restarts(&p),
		})
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(clusterCSIDriverGVK.GroupVersion().WithKind(clusterCSIDriverGVK.Kind + "List"))
	switch err := c.List(ctx, list); {
	case meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("listing ClusterCSIDrivers: %w", err)
	}
	for _, cr := range list.Items {
		plan.Unchanged = append(plan.Unchanged, Object{APIVersion: cr.GetAPIVersion(), Kind: cr.GetKind(), Name: cr.GetName(), UID: cr.GetUID()})
		var driver storagev1.CSIDriver
		switch err := c.Get(ctx, client.ObjectKey{Name: cr.GetName()}, &driver); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading CSIDriver %s: %w", cr.GetName(), err)
		default:
			plan.Unchanged = append(plan.Unchanged, Object{APIVersion: storagev1.SchemeGroupVersion.String(), Kind: "CSIDriver", Name: driver.Name, UID: driver.UID})
		}
	}
	return nil
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		n += s.RestartCount
	}
	return n
}

// planCensuses counts the custom resources of the CSV's CRDs and the cluster's volumes and
// claims.
func planCensuses(ctx context.Context, c client.Client, plan *Plan, csv *operatorsv1alpha1.ClusterServiceVersion) error {
	for _, owned := range csv.Spec.CustomResourceDefinitions.Owned {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: owned.Name}, &crd); err != nil {
			return fmt.Errorf("reading CRD %s, which CSV %s owns: %w", owned.Name, plan.CSV.Name, err)
		}
		version := ""
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				version = v.Name
			}
		}
		plan.Censuses = append(plan.Censuses, Census{
			What:       crd.Spec.Names.Plural + "." + crd.Spec.Group,
			APIVersion: schema.GroupVersion{Group: crd.Spec.Group, Version: version}.String(), Kind: crd.Spec.Names.Kind,
		})
	}
	plan.Censuses = append(plan.Censuses,
		Census{What: "PersistentVolumes", APIVersion: "v1", Kind: "PersistentVolume"},
		Census{What: "PersistentVolumeClaims", APIVersion: "v1", Kind: "PersistentVolumeClaim"})
	for i := range plan.Censuses {
		count, digest, err := take(ctx, c, plan.Censuses[i], plan.RecordedAt)
		if err != nil {
			return err
		}
		plan.Censuses[i].Count, plan.Censuses[i].Digest = count, digest
	}
	return nil
}

// take counts and digests the objects of a census created before at: objects made while the
// migration runs are not its business, and a second's creation timestamps cannot tell whether
// they came before the census or after.
func take(ctx context.Context, c client.Client, census Census, at time.Time) (int, string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.FromAPIVersionAndKind(census.APIVersion, census.Kind+"List"))
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return 0, "", fmt.Errorf("the cluster no longer serves %s (%s): %w", census.What, census.APIVersion, err)
		}
		return 0, "", fmt.Errorf("listing %s: %w", census.What, err)
	}
	var keys []string
	for _, o := range list.Items {
		if o.CreationTimestamp.Time.Before(at) {
			keys = append(keys, o.Namespace+"/"+o.Name+" "+string(o.UID))
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	return len(keys), hex.EncodeToString(h.Sum(nil)), nil
}

// nextUpgrade predicts, with the project's model of operator-controller's resolver, where OLM
// v1 takes the extension from the installed version once its version range allows it.
func nextUpgrade(plan *Plan, cfg *declcfg.DeclarativeConfig) string {
	r, err := olmv1.NewResolver(olmv1.Catalog{Name: plan.Catalog, Config: cfg})
	if err != nil {
		return "cannot be predicted: " + err.Error()
	}
	choice, err := r.Resolve(olmv1.Request{Package: plan.Package, Installed: &olmv1.Installed{Name: plan.CSV.Name, Version: plan.Version}})
	var rerr *olmv1.ResolutionError
	switch {
	case errors.As(err, &rerr):
		return "none: operator-controller would not resolve an upgrade (" + rerr.Message + ")"
	case err != nil:
		return "cannot be predicted: " + err.Error()
	case choice.Name == plan.CSV.Name:
		return fmt.Sprintf("none: %s is the newest bundle ClusterCatalog %s offers from %s", plan.Version, plan.Catalog, plan.CSV.Name)
	}
	return fmt.Sprintf("%s (version %s) from ClusterCatalog %s, once spec.source.catalog.version allows it (the migration pins %s)", choice.Name, choice.Version, choice.Catalog, plan.Version)
}

func conditionTrue(u *unstructured.Unstructured, condition string) bool {
	return olmv1api.ConditionField(u, condition, "status") == "True"
}

func conditionMessage(u *unstructured.Unstructured, condition string) string {
	reason, message := olmv1api.ConditionField(u, condition, "reason"), olmv1api.ConditionField(u, condition, "message")
	if reason == "" && message == "" {
		return "no " + condition + " condition yet"
	}
	return reason + ": " + message
}
