package olmv1

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olmv1api"
	"github.com/csi-olm/csi-olm/migrate/internal/migration"
)

// The way back's steps' names, as its journal records them.
const (
	orphanExtensionStep  = "orphan-extension"
	unmarkStep           = "unmark"
	restoreSubscription  = "restore-subscription"
	waitOLMv0Step        = "wait-olm-v0"
	deleteLeftoversStep  = "delete-olm-v1-leftovers"
	verifyBackStep       = "verify"
	helmStorageOwner     = "operator-controller"
	helmStorageOwnerKey  = "owner"
	helmStorageNameKey   = "name"
	helmStorageTypeKey   = "type"
	helmStorageTypeIndex = "index"
)

var backSteps = []string{orphanExtensionStep, unmarkStep, restoreSubscription, waitOLMv0Step, deleteLeftoversStep, verifyBackStep}

// runBack undoes the recorded migration from wherever it stopped: OLM v1 lets go of every object
// without deleting any, and OLM v0 takes the install back from a Subscription like the one it
// had. The way back has a journal of its own, so that it resumes after a kill as the migration
// does; the migration's journal goes once it is done.
func (m *Migrate) runBack(ctx context.Context) error {
	config, err := m.RESTConfig()
	if err != nil {
		return err
	}
	plan := &Plan{}
	back, err := migration.Resume(ctx, config, backVerb, m.Package, backSteps, plan, m.Progress)
	if err != nil {
		return err
	}
	// A way back not yet begun starts from the migration's plan.
	forwardPlan := plan
	if back.Journal != nil {
		forwardPlan = &Plan{}
	}
	forward, err := migration.Resume(ctx, config, verb, m.Package, forwardSteps, forwardPlan, m.Progress)
	if err != nil {
		return err
	}
	switch {
	case back.Journal == nil && forward.Journal == nil:
		return fmt.Errorf("no migration of package %s to OLM v1 is recorded on the cluster (no ConfigMap %s): there is nothing to go back from",
			m.Package, migration.Name(verb, m.Package))
	case back.Journal != nil && back.Journal.Completed():
		fmt.Fprintf(m.Out, "ConfigMap %s records the way back of %s to OLM v0 as completed; nothing to do\n", back.Journal.Ref(), m.Package)
		return nil
	case back.Journal == nil:
		back.Namespace = forward.Namespace
	}
	if err := kube.CheckAccess(ctx, back.Kube, backPermissions(plan.Namespace)); err != nil {
		return err
	}
	steps := m.backward(back.Client, plan)
	plan.Steps = migration.Describe(steps)
	if err := m.print(plan, true); err != nil {
		return err
	}
	if m.DryRun {
		fmt.Fprintln(m.Progress, migration.DryRunNote)
		return nil
	}
	j, err := back.Carry(ctx, plan, steps, m.Progress)
	if err != nil {
		if j != nil {
			return fmt.Errorf("%w\n\nRun the same command again to resume the way back from the step that stopped", err)
		}
		return err
	}
	if forward.Journal != nil {
		if err := forward.Journal.Delete(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(m.Out, "OLM v0 installs %s again (Subscription %s/%s, CSV %s), every object kept; the way back is recorded in ConfigMap %s\n",
		plan.Package, plan.Namespace, plan.Subscription.Name, plan.CSV.Name, j.Ref())
	return nil
}

func backPermissions(namespace string) []kube.Permission {
	return append(permissions(namespace),
		kube.Permission{Verb: "update", Group: "operators.coreos.com", Resource: "installplans", Namespace: namespace},
		kube.Permission{Verb: "list", Resource: "secrets"},
		kube.Permission{Verb: "delete", Resource: "secrets"},
		kube.Permission{Verb: "delete", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		kube.Permission{Verb: "delete", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		kube.Permission{Verb: "delete", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespace: namespace},
		kube.Permission{Verb: "delete", Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Namespace: namespace},
	)
}

func (m *Migrate) backward(c client.Client, plan *Plan) []migration.Step {
	return []migration.Step{{
		Name:        orphanExtensionStep,
		Description: fmt.Sprintf("delete ClusterExtension %s, orphaning what it installed: it goes once no adopted object names it as owner, and nothing of it is deleted", plan.Extension),
		Do: func(ctx context.Context) error {
			if err := orphanExtension(ctx, c, plan, m.Timeout); err != nil {
				return err
			}
			return migration.Wait(ctx, m.Progress, "ClusterExtension "+plan.Extension+" to go", m.Timeout, func(ctx context.Context) (bool, string, error) {
				ce, err := getExtension(ctx, c, plan)
				if err != nil || ce == nil {
					return err == nil, "", err
				}
				return false, fmt.Sprintf("finalizers %v", ce.GetFinalizers()), nil
			})
		},
	}, {
		Name:        unmarkStep,
		Description: fmt.Sprintf("take Helm's and OLM v1's marks off the %d adopted objects", len(plan.Adopted)),
		Do: func(ctx context.Context) error {
			if err := forEachAdopted(ctx, c, plan, func(u *unstructured.Unstructured) { unmark(u, plan) }); err != nil {
				return err
			}
			// A CSV the move had not deleted yet owns its cluster RBAC by label again.
			if live, err := csvAlive(ctx, c, plan); err != nil || !live {
				return err
			}
			return forEachRetired(ctx, c, plan, true, func(u *unstructured.Unstructured) { setOLMOwner(u, plan, true) })
		},
	}, {
		Name:        restoreSubscription,
		Description: fmt.Sprintf("create Subscription %s/%s again, as it was, starting at %s", plan.Namespace, plan.Subscription.Name, plan.CSV.Name),
		Do:          func(ctx context.Context) error { return restore(ctx, c, plan) },
	}, {
		Name:        waitOLMv0Step,
		Description: fmt.Sprintf("wait for OLM v0 to run %s again (approving its InstallPlan, which installs only that CSV)", plan.CSV.Name),
		Do: func(ctx context.Context) error {
			return migration.Wait(ctx, m.Progress, "OLM v0 to run "+plan.CSV.Name, m.Timeout, func(ctx context.Context) (bool, string, error) {
				return olmV0Runs(ctx, c, plan)
			})
		},
	}, {
		Name:        deleteLeftoversStep,
		Description: fmt.Sprintf("delete what OLM v1 made for ClusterExtension %s alone (its RBAC under its names, its Helm release records) and the first CSV's RBAC, if OLM v0 made its own anew", plan.Extension),
		Do: func(ctx context.Context) error {
			if err := deleteLeftovers(ctx, c, plan); err != nil {
				return err
			}
			// What no CSV holds any more by owner label or reference, OLM v0 made anew.
			return deleteRetired(ctx, c, plan, func(u *unstructured.Unstructured) bool {
				return u.GetLabels()[olmOwnerLabel] == "" && !slices.ContainsFunc(u.GetOwnerReferences(), func(r metav1.OwnerReference) bool {
					return r.Kind == operatorsv1alpha1.ClusterServiceVersionKind
				})
			})
		},
	}, {
		Name:        verifyBackStep,
		Description: "check that every object kept its UID and the node plugins never restarted",
		Do: func(ctx context.Context) error {
			return migration.Wait(ctx, m.Progress, "every kept object", m.Timeout, func(ctx context.Context) (bool, string, error) {
				for _, o := range plan.Adopted {
					if _, err := get(ctx, c, o); err != nil {
						return false, "", fmt.Errorf("%s: %w", o, err)
					}
				}
				return kept(ctx, c, plan)
			})
		},
	}}
}

// csvAlive says whether the CSV the plan recorded still stands, not being deleted.
func csvAlive(ctx context.Context, c client.Client, plan *Plan) (bool, error) {
	var csv operatorsv1alpha1.ClusterServiceVersion
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.CSV.Name}, &csv); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading CSV %s: %w", plan.CSV, err)
	}
	return csv.UID == plan.CSV.UID && csv.DeletionTimestamp == nil, nil
}

// orphanExtension deletes the migration's ClusterExtension with the orphan policy, and frees
// every adopted object from its owner reference.
func orphanExtension(ctx context.Context, c client.Client, plan *Plan, timeout time.Duration) error {
	ce, err := getExtension(ctx, c, plan)
	if err != nil || ce == nil {
		return err
	}
	if !sameSource(ce, extension(plan)) {
		return fmt.Errorf("ClusterExtension %s is not the one the migration made (it installs something else now): going back would hand OLM v0 what it never installed; nothing was changed", plan.Extension)
	}
	return orphanDelete(ctx, c, ce, "ClusterExtension "+plan.Extension, plan.Adopted, timeout)
}

// unmark takes Helm's ownership marks and OLM v1's labels off u, and any owner reference to the
// ClusterExtension the garbage collector left.
func unmark(u *unstructured.Unstructured, plan *Plan) {
	labels := u.GetLabels()
	if labels[olmv1api.ManagedByLabel] == olmv1api.ManagedByHelm {
		delete(labels, olmv1api.ManagedByLabel)
	}
	if labels[olmv1api.OwnerNameLabel] == plan.Extension {
		for _, k := range []string{olmv1api.OwnerKindLabel, olmv1api.OwnerNameLabel, olmv1api.PackageNameLabel, olmv1api.BundleNameLabel} {
			delete(labels, k)
		}
	}
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations[olmv1api.ReleaseNameAnnotation] == plan.Extension {
		delete(annotations, olmv1api.ReleaseNameAnnotation)
		delete(annotations, olmv1api.ReleaseNamespaceAnnotation)
	}
	u.SetAnnotations(annotations)
	u.SetOwnerReferences(slices.DeleteFunc(u.GetOwnerReferences(), func(r metav1.OwnerReference) bool {
		return r.Kind == olmv1api.ClusterExtensionGVK.Kind && r.Name == plan.Extension
	}))
}

// restore creates the Subscription again from the recorded spec. When the CSV is gone it starts
// at the recorded CSV, so that OLM v0 installs the version that ran, not its channel's head.
func restore(ctx context.Context, c client.Client, plan *Plan) error {
	var existing operatorsv1alpha1.Subscription
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Subscription.Name}, &existing); {
	case err == nil:
		if existing.Spec == nil || existing.Spec.Package != plan.Package {
			return fmt.Errorf("Subscription %s exists, but not of package %s: someone else made it", plan.Subscription, plan.Package)
		}
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading Subscription %s: %w", plan.Subscription, err)
	}
	spec := plan.SubscriptionSpec.DeepCopy()
	var csv operatorsv1alpha1.ClusterServiceVersion
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.CSV.Name}, &csv); {
	case apierrors.IsNotFound(err):
		spec.StartingCSV = plan.CSV.Name
	case err != nil:
		return fmt.Errorf("reading CSV %s: %w", plan.CSV, err)
	}
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Namespace: plan.Namespace, Name: plan.Subscription.Name},
		Spec:       spec,
	}
	if err := c.Create(ctx, sub, client.FieldOwner(fieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Subscription %s: %w", plan.Subscription, err)
	}
	return nil
}

// olmV0Runs reports whether OLM v0 runs the recorded CSV again. It approves a manual InstallPlan
// that installs exactly that CSV: going back asked for it, and nothing else.
func olmV0Runs(ctx context.Context, c client.Client, plan *Plan) (bool, string, error) {
	var sub operatorsv1alpha1.Subscription
	if err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Subscription.Name}, &sub); err != nil {
		return false, "", fmt.Errorf("reading Subscription %s: %w", plan.Subscription, err)
	}
	if ref := sub.Status.InstallPlanRef; ref != nil {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var ip operatorsv1alpha1.InstallPlan
			if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &ip); err != nil {
				return client.IgnoreNotFound(err)
			}
			if ip.Spec.Approved || !slices.Equal(ip.Spec.ClusterServiceVersionNames, []string{plan.CSV.Name}) {
				return nil
			}
			ip.Spec.Approved = true
			return c.Update(ctx, &ip, client.FieldOwner(fieldManager))
		})
		if err != nil {
			return false, "", fmt.Errorf("approving InstallPlan %s/%s of %s: %w", ref.Namespace, ref.Name, plan.CSV.Name, err)
		}
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.CSV.Name}, &csv); {
	case apierrors.IsNotFound(err):
		return false, "CSV not installed yet; Subscription: " + strings.TrimSpace(string(sub.Status.State)), nil
	case err != nil:
		return false, "", err
	}
	if csv.Status.Phase != operatorsv1alpha1.CSVPhaseSucceeded || sub.Status.InstalledCSV == "" {
		return false, fmt.Sprintf("CSV %s is %s (%s); Subscription installedCSV %q", csv.Name, csv.Status.Phase, csv.Status.Message, sub.Status.InstalledCSV), nil
	}
	return true, "", nil
}

// deleteLeftovers deletes the RBAC operator-controller made for the ClusterExtension, which the
// orphaning kept but OLM v0 does not use, and the Secrets that recorded its Helm release: a
// ClusterExtension of the same name made later would take them for its own history.
func deleteLeftovers(ctx context.Context, c client.Client, plan *Plan) error {
	selector := client.MatchingLabels{olmv1api.OwnerKindLabel: olmv1api.ClusterExtensionGVK.Kind, olmv1api.OwnerNameLabel: plan.Extension}
	var objs []client.Object
	for _, l := range []client.ObjectList{&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}} {
		if err := c.List(ctx, l, selector); err != nil {
			return fmt.Errorf("listing what OLM v1 made for ClusterExtension %s: %w", plan.Extension, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return err
		}
		for _, item := range items {
			objs = append(objs, item.(client.Object))
		}
	}
	var releases corev1.SecretList
	if err := c.List(ctx, &releases, client.MatchingLabels{helmStorageOwnerKey: helmStorageOwner, helmStorageNameKey: plan.Extension, helmStorageTypeKey: helmStorageTypeIndex}); err != nil {
		return fmt.Errorf("listing the Helm release records of ClusterExtension %s: %w", plan.Extension, err)
	}
	for i := range releases.Items {
		// The release's chunks are owned by its index Secret and go with it.
		objs = append(objs, &releases.Items[i])
	}
	adopted := map[string]bool{}
	for _, o := range plan.Adopted {
		adopted[string(o.UID)] = true
	}
	for _, o := range objs {
		if adopted[string(o.GetUID())] {
			continue
		}
		uid := o.GetUID()
		if err := c.Delete(ctx, o, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}
