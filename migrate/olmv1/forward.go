package olmv1

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olmv1api"
	"github.com/csi-olm/csi-olm/migrate/internal/migration"
)

// The forward steps' names, as the journal records them.
const (
	deleteSubscriptionStep = "delete-subscription"
	markStep               = "mark-for-olm-v1"
	releaseStep            = "release-from-olm-v0"
	createExtensionStep    = "create-extension"
	waitInstalledStep      = "wait-installed"
	retireStep             = "delete-olm-v0-leftovers"
	verifyStep             = "verify"
)

var forwardSteps = []string{deleteSubscriptionStep, markStep, releaseStep, createExtensionStep, waitInstalledStep, retireStep, verifyStep}

func (m *Migrate) runForward(ctx context.Context) error {
	config, err := m.RESTConfig()
	if err != nil {
		return err
	}
	plan := &Plan{}
	mig, err := migration.Begin(ctx, config, verb, m.Package, m.Package, forwardSteps, plan, m.Progress)
	if err != nil {
		return err
	}
	// A way back that stopped halfway must finish before the move starts again: both would act
	// on the same objects.
	back, err := migration.Find(ctx, mig.Client, backVerb, m.Package)
	if err != nil {
		return err
	}
	if back != nil && !back.Completed() {
		return fmt.Errorf("ConfigMap %s records an unfinished way back of %s to OLM v0: finish it first (%s), then run this again; nothing was changed",
			back.Ref(), m.Package, "csi-olm migrate olm-v1 --back --package "+m.Package+" --confirm")
	}
	if mig.Journal != nil {
		if plan.Catalog != m.Catalog || (m.Extension != "" && m.Extension != plan.Extension) {
			return fmt.Errorf("ConfigMap %s records a migration of %s to ClusterExtension %s from ClusterCatalog %s: run with those flags to resume it, or go back first (%s)",
				mig.Journal.Ref(), plan.Package, plan.Extension, plan.Catalog, m.backCommand(plan))
		}
		if mig.Journal.Completed() {
			fmt.Fprintf(m.Out, "ConfigMap %s records the migration of %s to ClusterExtension %s as completed; nothing to do. Back to OLM v0: %s\n",
				mig.Journal.Ref(), plan.Package, plan.Extension, m.backCommand(plan))
			return nil
		}
	}
	if err := kube.CheckAccess(ctx, mig.Kube, permissions(mig.Namespace)); err != nil {
		return err
	}
	if mig.Journal == nil {
		if plan, err = m.plan(ctx, mig.Client, mig.Kube, mig.Subscription); err != nil {
			return err
		}
	}
	steps := m.forward(mig.Client, plan)
	plan.Steps = migration.Describe(steps)
	if err := m.print(plan, false); err != nil {
		return err
	}
	if m.DryRun {
		fmt.Fprintln(m.Progress, migration.DryRunNote)
		return nil
	}
	if mig.Journal == nil {
		// A way back completed earlier leaves its journal; this new migration has its own.
		if err := migration.Forget(ctx, mig.Client, backVerb, m.Package); err != nil {
			return err
		}
	}
	j, err := mig.Carry(ctx, plan, steps, m.Progress)
	if err != nil {
		if j != nil {
			return fmt.Errorf("%w\n\nRun the same command again to resume from the step that stopped, or go back to OLM v0:\n  %s", err, m.backCommand(plan))
		}
		return err
	}
	fmt.Fprintf(m.Out, "ClusterExtension %s installs %s %s, adopted from OLM v0 with every object kept; the migration is recorded in ConfigMap %s.\nBack to OLM v0: %s\n",
		plan.Extension, plan.Package, plan.Version, j.Ref(), m.backCommand(plan))
	return nil
}

// permissions are what the verb does, either way, checked before the first change.
func permissions(namespace string) []kube.Permission {
	return []kube.Permission{
		{Verb: "get", Group: "operators.coreos.com", Resource: "subscriptions", Namespace: namespace},
		{Verb: "create", Group: "operators.coreos.com", Resource: "subscriptions", Namespace: namespace},
		{Verb: "delete", Group: "operators.coreos.com", Resource: "subscriptions", Namespace: namespace},
		{Verb: "get", Group: "operators.coreos.com", Resource: "clusterserviceversions", Namespace: namespace},
		{Verb: "update", Group: "operators.coreos.com", Resource: "clusterserviceversions", Namespace: namespace},
		{Verb: "delete", Group: "operators.coreos.com", Resource: "clusterserviceversions", Namespace: namespace},
		{Verb: "list", Group: "operators.coreos.com", Resource: "operatorgroups", Namespace: namespace},
		{Verb: "get", Group: olmv1api.ClusterExtensionGVK.Group, Resource: "clusterextensions"},
		{Verb: "list", Group: olmv1api.ClusterExtensionGVK.Group, Resource: "clusterextensions"},
		{Verb: "create", Group: olmv1api.ClusterExtensionGVK.Group, Resource: "clusterextensions"},
		{Verb: "update", Group: olmv1api.ClusterExtensionGVK.Group, Resource: "clusterextensions"},
		{Verb: "delete", Group: olmv1api.ClusterExtensionGVK.Group, Resource: "clusterextensions"},
		{Verb: "get", Group: olmv1api.ClusterCatalogGVK.Group, Resource: "clustercatalogs"},
		{Verb: "create", Resource: "configmaps", Namespace: namespace},
		{Verb: "update", Resource: "configmaps", Namespace: namespace},
		{Verb: "delete", Resource: "configmaps", Namespace: namespace},
		{Verb: "list", Resource: "pods", Namespace: namespace},
		{Verb: "list", Resource: "persistentvolumes"},
		{Verb: "list", Resource: "persistentvolumeclaims"},
		{Verb: "list", Group: "apps", Resource: "deployments", Namespace: namespace},
		{Verb: "list", Group: "apps", Resource: "daemonsets", Namespace: namespace},
		{Verb: "list", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
		{Verb: "list", Group: "rbac.authorization.k8s.io", Resource: "roles", Namespace: namespace},
		{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "create", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	}
}

func (m *Migrate) forward(c client.Client, plan *Plan) []migration.Step {
	return []migration.Step{{
		Name:        deleteSubscriptionStep,
		Description: fmt.Sprintf("delete Subscription %s/%s, so that OLM v0 upgrades nothing more; its CSV %s keeps running", plan.Namespace, plan.Subscription.Name, plan.CSV.Name),
		Do:          func(ctx context.Context) error { return deleteSubscription(ctx, c, plan) },
	}, {
		Name:        markStep,
		Description: fmt.Sprintf("mark the %d objects OLM v1 adopts as Helm release %s's (namespace %s)", len(plan.Adopted), plan.Extension, plan.Namespace),
		Do: func(ctx context.Context) error {
			return forEachAdopted(ctx, c, plan, func(u *unstructured.Unstructured) { mark(u, plan) })
		},
	}, {
		// OLM v0 keeps applying what its CSV says, owner references included: beside OLM v1 it
		// would take the Deployment back, and the CSV's deletion would then delete it. So the CSV
		// goes first, with the orphan policy, which has the garbage collector take its owner
		// reference off every object instead of deleting them; its cluster RBAC, which OLM v0
		// deletes by label when the CSV goes, loses that label first and keeps granting the
		// operator its permissions until OLM v1 grants them under its own names.
		Name:        releaseStep,
		Description: fmt.Sprintf("delete CSV %s/%s, orphaning what it owns: OLM v0 lets go of every object and deletes none", plan.Namespace, plan.CSV.Name),
		Do: func(ctx context.Context) error {
			if err := forEachRetired(ctx, c, plan, true, func(u *unstructured.Unstructured) { setOLMOwner(u, plan, false) }); err != nil {
				return err
			}
			if err := orphanCSV(ctx, c, plan, m.Timeout); err != nil {
				return err
			}
			return migration.Wait(ctx, m.Progress, "CSV "+plan.CSV.Name+" to go", m.Timeout, func(ctx context.Context) (bool, string, error) {
				var csv operatorsv1alpha1.ClusterServiceVersion
				err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.CSV.Name}, &csv)
				switch {
				case apierrors.IsNotFound(err) || (err == nil && csv.UID != plan.CSV.UID):
					return true, "", nil
				case err != nil:
					return false, "", err
				}
				return false, fmt.Sprintf("finalizers %v", csv.Finalizers), nil
			})
		},
	}, {
		Name:        createExtensionStep,
		Description: fmt.Sprintf("create ClusterExtension %s: package %s, version %s exactly, from ClusterCatalog %s", plan.Extension, plan.Package, plan.Version, plan.Catalog),
		Do:          func(ctx context.Context) error { return createExtension(ctx, c, plan) },
	}, {
		Name:        waitInstalledStep,
		Description: fmt.Sprintf("wait for OLM v1 to install %s and adopt every marked object", plan.CSV.Name),
		Do: func(ctx context.Context) error {
			return migration.Wait(ctx, m.Progress, "ClusterExtension "+plan.Extension, m.Timeout, func(ctx context.Context) (bool, string, error) {
				return adopted(ctx, c, plan)
			})
		},
	}, {
		Name:        retireStep,
		Description: fmt.Sprintf("delete the %d objects OLM v0 made for the CSV alone (its RBAC under its names), now that OLM v1 grants the same", len(plan.Retired)),
		Do: func(ctx context.Context) error {
			return deleteRetired(ctx, c, plan, func(*unstructured.Unstructured) bool { return true })
		},
	}, {
		Name:        verifyStep,
		Description: "check that every object kept its UID, the node plugins never restarted and OLM v1 reports the same version Installed",
		Do: func(ctx context.Context) error {
			return migration.Wait(ctx, m.Progress, "every kept object", m.Timeout, func(ctx context.Context) (bool, string, error) {
				if done, status, err := adopted(ctx, c, plan); !done || err != nil {
					return done, status, err
				}
				return kept(ctx, c, plan)
			})
		},
	}}
}

// deleteSubscription deletes the Subscription the plan recorded, once: the precondition on its
// UID leaves alone one made since by someone else.
func deleteSubscription(ctx context.Context, c client.Client, plan *Plan) error {
	var sub operatorsv1alpha1.Subscription
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Subscription.Name}, &sub); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading Subscription %s: %w", plan.Subscription, err)
	case sub.UID != plan.Subscription.UID:
		return fmt.Errorf("Subscription %s was replaced since the plan was made (UID %s, not %s): %w", plan.Subscription, sub.UID, plan.Subscription.UID, migration.ErrNothingChanged)
	case sub.Status.InstalledCSV != plan.CSV.Name:
		return fmt.Errorf("Subscription %s installs %s now, not %s as planned: %w", plan.Subscription, sub.Status.InstalledCSV, plan.CSV.Name, migration.ErrNothingChanged)
	}
	uid := sub.UID
	if err := c.Delete(ctx, &sub, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Subscription %s: %w", plan.Subscription, err)
	}
	return nil
}

// forEachAdopted applies change to every adopted object, each the object the plan recorded:
// one replaced since (another UID) is refused, since the migration would hand over something it
// never checked.
func forEachAdopted(ctx context.Context, c client.Client, plan *Plan, change func(*unstructured.Unstructured)) error {
	var problems []string
	for _, o := range plan.Adopted {
		if err := update(ctx, c, o, change); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", o, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("changing %d of the %d adopted objects failed:\n  - %s", len(problems), len(plan.Adopted), strings.Join(problems, "\n  - "))
	}
	return nil
}

// update applies change to o, the object the plan recorded, and writes it when that changed it;
// a write that lost a race reads the object again.
func update(ctx context.Context, c client.Client, o Object, change func(*unstructured.Unstructured)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := get(ctx, c, o)
		if err != nil {
			return err
		}
		updated := live.DeepCopy()
		change(updated)
		if equality.Semantic.DeepEqual(live.Object, updated.Object) {
			return nil
		}
		return c.Update(ctx, updated, client.FieldOwner(fieldManager))
	})
}

// errReplaced is an object of the recorded name, but not the recorded object.
var errReplaced = errors.New("it was replaced")

// get reads o, which must be the object the plan recorded.
func get(ctx context.Context, c client.Client, o Object) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind))
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("it is gone: %w", err)
		}
		return nil, err
	}
	if o.UID != "" && live.GetUID() != o.UID {
		return nil, fmt.Errorf("%w (UID %s, the plan recorded %s)", errReplaced, live.GetUID(), o.UID)
	}
	return live, nil
}

// mark puts Helm's ownership marks, naming the ClusterExtension's release, on u.
func mark(u *unstructured.Unstructured, plan *Plan) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[olmv1api.ManagedByLabel] = olmv1api.ManagedByHelm
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[olmv1api.ReleaseNameAnnotation] = plan.Extension
	annotations[olmv1api.ReleaseNamespaceAnnotation] = plan.Namespace
	u.SetAnnotations(annotations)
}

// extension is the ClusterExtension the migration creates: the installed version exactly, from
// the named catalog only, into the install's namespace.
func extension(plan *Plan) *unstructured.Unstructured {
	ce := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"namespace":      plan.Namespace,
			"serviceAccount": map[string]any{"name": plan.ServiceAccount},
			"source": map[string]any{
				"sourceType": "Catalog",
				"catalog": map[string]any{
					"packageName": plan.Package,
					"version":     plan.Version,
					"selector":    map[string]any{"matchLabels": map[string]any{olmv1api.CatalogNameLabel: plan.Catalog}},
				},
			},
		},
	}}
	ce.SetGroupVersionKind(olmv1api.ClusterExtensionGVK)
	ce.SetName(plan.Extension)
	return ce
}

// createExtension creates the ClusterExtension, or finds the one an interrupted run created.
func createExtension(ctx context.Context, c client.Client, plan *Plan) error {
	want := extension(plan)
	err := c.Create(ctx, want, client.FieldOwner(fieldManager))
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating ClusterExtension %s: %w", plan.Extension, err)
		}
		return nil
	}
	live, err := getExtension(ctx, c, plan)
	if err != nil {
		return err
	}
	if live == nil || !sameSource(live, want) {
		return fmt.Errorf("ClusterExtension %s exists, but not as this migration creates it (package %s, version %s, catalog %s, namespace %s): someone else made it; delete it, or go back (csi-olm migrate olm-v1 --back)",
			plan.Extension, plan.Package, plan.Version, plan.Catalog, plan.Namespace)
	}
	return nil
}

// sameSource says whether a live ClusterExtension installs what want does.
func sameSource(live, want *unstructured.Unstructured) bool {
	for _, path := range [][]string{{"spec", "namespace"}, {"spec", "source", "catalog", "packageName"}, {"spec", "source", "catalog", "version"}} {
		a, _, _ := unstructured.NestedString(live.Object, path...)
		b, _, _ := unstructured.NestedString(want.Object, path...)
		if a != b {
			return false
		}
	}
	return true
}

// getExtension reads the migration's ClusterExtension; nil when there is none.
func getExtension(ctx context.Context, c client.Client, plan *Plan) (*unstructured.Unstructured, error) {
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(olmv1api.ClusterExtensionGVK)
	switch err := c.Get(ctx, client.ObjectKey{Name: plan.Extension}, ce); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ClusterExtension %s: %w", plan.Extension, err)
	}
	return ce, nil
}

// adopted reports whether OLM v1 installed the recorded version and controls every adopted
// object. A ClusterExtension that cannot install says why in its Progressing condition, which
// the wait shows; it may be a passing state (catalogd still unpacking), so only the timeout ends
// the wait.
func adopted(ctx context.Context, c client.Client, plan *Plan) (bool, string, error) {
	ce, err := getExtension(ctx, c, plan)
	if err != nil {
		return false, "", err
	}
	if ce == nil {
		return false, "", fmt.Errorf("ClusterExtension %s is gone", plan.Extension)
	}
	name, _, _ := unstructured.NestedString(ce.Object, "status", "install", "bundle", "name")
	if !conditionTrue(ce, "Installed") || name != plan.CSV.Name {
		return false, fmt.Sprintf("installed %q; Installed: %s; Progressing: %s", name, conditionMessage(ce, "Installed"), conditionMessage(ce, "Progressing")), nil
	}
	var waiting []string
	for _, o := range plan.Adopted {
		live, err := get(ctx, c, o)
		if err != nil {
			return false, "", fmt.Errorf("%s, which OLM v1 was to adopt: %w", o, err)
		}
		if owner := metav1.GetControllerOf(live); owner == nil || owner.UID != ce.GetUID() {
			waiting = append(waiting, o.String())
		}
	}
	if len(waiting) > 0 {
		return false, "not yet controlled by the ClusterExtension: " + strings.Join(waiting, ", "), nil
	}
	return true, "", nil
}

// orphanCSV deletes the CSV the plan recorded with the orphan policy, and frees every object the
// plan keeps or retires later from its owner references.
func orphanCSV(ctx context.Context, c client.Client, plan *Plan, timeout time.Duration) error {
	var csv operatorsv1alpha1.ClusterServiceVersion
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.CSV.Name}, &csv); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading CSV %s: %w", plan.CSV, err)
	case csv.UID != plan.CSV.UID:
		return fmt.Errorf("CSV %s was replaced since the plan was made (UID %s, not %s): OLM v0 installed it again; go back (csi-olm migrate olm-v1 --back)", plan.CSV, csv.UID, plan.CSV.UID)
	}
	return orphanDelete(ctx, c, &csv, "CSV "+plan.CSV.String(), slices.Concat(plan.Adopted, plan.Retired), timeout)
}

// OLM v0's marks on what it made for a CSV where an owner reference cannot point at it: it
// deletes what carries them when the CSV goes.
var olmOwnerLabels = []string{olmOwnerLabel, olmOwnerNamespaceLabel, olmOwnerKindLabel}

// setOLMOwner puts OLM v0's owner labels naming the CSV on u, or takes them off.
func setOLMOwner(u *unstructured.Unstructured, plan *Plan, owned bool) {
	labels := u.GetLabels()
	if owned {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[olmOwnerLabel], labels[olmOwnerNamespaceLabel], labels[olmOwnerKindLabel] = plan.CSV.Name, plan.Namespace, operatorsv1alpha1.ClusterServiceVersionKind
	} else if labels[olmOwnerLabel] == plan.CSV.Name && labels[olmOwnerNamespaceLabel] == plan.Namespace {
		for _, k := range olmOwnerLabels {
			delete(labels, k)
		}
	}
	u.SetLabels(labels)
}

// forEachRetired applies change to every retired object that still exists, the cluster-scoped
// ones only when clusterOnly: OLM v0 deletes those by label, the others by owner reference.
func forEachRetired(ctx context.Context, c client.Client, plan *Plan, clusterOnly bool, change func(*unstructured.Unstructured)) error {
	for _, o := range plan.Retired {
		if clusterOnly && o.Namespace != "" {
			continue
		}
		err := update(ctx, c, o, change)
		if err != nil && !apierrors.IsNotFound(err) && !errors.Is(err, errReplaced) {
			return fmt.Errorf("changing %s: %w", o, err)
		}
	}
	return nil
}

// deleteRetired deletes each retired object that is still the one the plan recorded and that
// should go.
func deleteRetired(ctx context.Context, c client.Client, plan *Plan, should func(*unstructured.Unstructured) bool) error {
	for _, o := range plan.Retired {
		live, err := get(ctx, c, o)
		if apierrors.IsNotFound(err) || errors.Is(err, errReplaced) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", o, err)
		}
		if !should(live) {
			continue
		}
		uid := live.GetUID()
		if err := c.Delete(ctx, live, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", o, err)
		}
	}
	return nil
}

// kept reports whether everything the migration must keep is as the plan recorded it.
func kept(ctx context.Context, c client.Client, plan *Plan) (bool, string, error) {
	var problems []string
	for _, o := range plan.Unchanged {
		if _, err := get(ctx, c, o); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", o, err))
		}
	}
	for _, p := range plan.NodePods {
		var live corev1.Pod
		err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, &live)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && live.UID != p.UID):
			problems = append(problems, fmt.Sprintf("node plugin %s was replaced: its node could mount no volume meanwhile", p.Object))
			continue
		case err != nil:
			problems = append(problems, fmt.Sprintf("node plugin %s: %v", p.Object, err))
			continue
		}
		if n := restarts(&live); n != p.Restarts {
			problems = append(problems, fmt.Sprintf("node plugin %s restarted (%d restarts, %d before)", p.Object, n, p.Restarts))
		}
	}
	for _, census := range plan.Censuses {
		count, digest, err := take(ctx, c, census, plan.RecordedAt)
		if err != nil {
			problems = append(problems, err.Error())
		} else if digest != census.Digest {
			problems = append(problems, fmt.Sprintf("%s changed: %d made before the migration then, %d now, or some replaced", census.What, census.Count, count))
		}
	}
	if len(problems) > 0 {
		// A lost object does not come back by waiting.
		return false, "", fmt.Errorf("the migration did not keep everything:\n  - %s", strings.Join(problems, "\n  - "))
	}
	return true, "", nil
}
