// Package subscription is the `csi-olm migrate subscription` verb: it moves the Subscription of
// the community aws-efs-operator to the certified catalog, the documented upgrade to the
// supported EFS operator (docs/architecture.md#upgrades), and checks that the driver kept serving every volume.
package subscription

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/efs"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/migrate"
	"github.com/csi-olm/csi-olm/migrate/internal/migration"
	sharedvolumev1alpha1 "github.com/csi-olm/csi-olm/sharedvolume/api/v1alpha1"
)

const (
	verb         = "subscription"
	fieldManager = "csi-olm-migrate"
)

// Migrate switches the EFS operator's Subscription to another catalog.
type Migrate struct {
	migrate.Options
	Source          string
	SourceNamespace string
	// Channel is the target channel; empty keeps the Subscription's channel.
	Channel string
	// RegistryAddress overrides where the target catalog's registry is reached.
	RegistryAddress string
}

// Endpoint is one side of the switch.
type Endpoint struct {
	Source          string `json:"source"`
	SourceNamespace string `json:"sourceNamespace"`
	Channel         string `json:"channel"`
}

// Plan is what the migration does. It is printed, and recorded in the journal before the first
// change, so that a resumed run carries on with the same plan.
type Plan struct {
	Namespace        string   `json:"namespace"`
	Name             string   `json:"name"`
	InstalledCSV     string   `json:"installedCSV"`
	InstalledVersion string   `json:"installedVersion"`
	From             Endpoint `json:"from"`
	To               Endpoint `json:"to"`
	Upgrade          *Upgrade `json:"upgrade"`
	// OriginalSpec is the Subscription's spec before the migration: the backup to restore.
	OriginalSpec       operatorsv1alpha1.SubscriptionSpec `json:"originalSpec"`
	DriverDaemonSetUID types.UID                          `json:"driverDaemonSetUID,omitempty"`
	ReadySharedVolumes []string                           `json:"readySharedVolumes"`
	// Stuck is set when the Subscription was already switched to the target, not by this verb,
	// and OLM failed the InstallPlan of the upgrade: the migration takes it over from there.
	Stuck *StuckSwitch `json:"stuck,omitempty"`
	// SharedVolumes says that every SharedVolume is valid under the CRDs the upgrade brings.
	SharedVolumes *SharedVolumeCheck `json:"sharedVolumes,omitempty"`
	Warnings      []string           `json:"warnings,omitempty"`
	Steps         []string           `json:"steps"`
}

// Run plans the migration, prints the plan and, unless it is a dry run, carries it out.
func (m *Migrate) Run(ctx context.Context) error {
	if err := migration.CheckFormat(m.Output); err != nil {
		return err
	}
	config, err := m.RESTConfig()
	if err != nil {
		return err
	}
	plan := &Plan{}
	mig, err := migration.Begin(ctx, config, verb, efs.Package, efs.Package, stepNames, plan, m.Progress)
	if err != nil {
		return err
	}
	if mig.Journal != nil {
		if err := m.checkRecordedTarget(mig.Journal, plan); err != nil {
			return err
		}
	}
	// Reading the cluster needs these permissions too: check them all before planning, so that
	// a user who lacks some learns every one at once.
	if err := kube.CheckAccess(ctx, mig.Kube, m.permissions(ctx, mig)); err != nil {
		return err
	}
	if mig.Journal != nil {
		if err := checkRecordedSubscription(ctx, mig.Client, mig.Journal, plan); err != nil {
			return err
		}
	} else {
		if plan, err = m.plan(ctx, mig.Client, config, mig.Subscription); err != nil {
			return err
		}
	}
	steps := m.steps(mig.Client, plan)
	plan.Steps = migration.Describe(steps)
	if err := m.print(plan); err != nil {
		return err
	}
	if m.DryRun {
		fmt.Fprintln(m.Progress, migration.DryRunNote)
		return nil
	}
	j, err := mig.Carry(ctx, plan, steps, m.Progress)
	if err != nil {
		if j != nil {
			return fmt.Errorf("%w\n\n%s", err, restoreHelp(plan, j.Ref(), err))
		}
		return err
	}
	fmt.Fprintf(m.Out, "Subscription %s/%s installs %s from catalog %s/%s; the migration is recorded in ConfigMap %s\n",
		plan.Namespace, plan.Name, plan.Upgrade.Head, plan.To.SourceNamespace, plan.To.Source, j.Ref())
	return m.remind(ctx, mig.Client)
}

func (m *Migrate) permissions(ctx context.Context, mig *migration.Migration) []kube.Permission {
	namespace := mig.Namespace
	ps := []kube.Permission{
		{Verb: "get", Group: "operators.coreos.com", Resource: "subscriptions", Namespace: namespace},
		{Verb: "update", Group: "operators.coreos.com", Resource: "subscriptions", Namespace: namespace},
		{Verb: "get", Group: "operators.coreos.com", Resource: "clusterserviceversions", Namespace: namespace},
		{Verb: "get", Group: "operators.coreos.com", Resource: "installplans", Namespace: namespace},
		// A rerun after a failed InstallPlan clears it, and the CSV it left Pending, for OLM to
		// try again.
		{Verb: "delete", Group: "operators.coreos.com", Resource: "installplans", Namespace: namespace},
		{Verb: "delete", Group: "operators.coreos.com", Resource: "clusterserviceversions", Namespace: namespace},
		{Verb: "update", Group: "operators.coreos.com", Resource: "subscriptions", Subresource: "status", Namespace: namespace},
		// Following the upgrade reads the target catalog's connection state.
		{Verb: "get", Group: "operators.coreos.com", Resource: "catalogsources", Namespace: m.SourceNamespace},
		{Verb: "create", Resource: "configmaps", Namespace: namespace},
		{Verb: "update", Resource: "configmaps", Namespace: namespace},
		{Verb: "get", Group: "apps", Resource: "daemonsets", Namespace: namespace},
		{Verb: "list", Group: sharedvolumev1alpha1.GroupVersion.Group, Resource: "sharedvolumes"},
		{Verb: "get", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
		{Verb: "get", Group: operatorv1.GroupName, Resource: "clustercsidrivers"},
		// The target catalog must be the index of the cluster's OpenShift minor.
		{Verb: "get", Group: "config.openshift.io", Resource: "clusterversions"},
	}
	// Planning asks the target catalog; one served in the cluster is reached by port-forward.
	var cs operatorsv1alpha1.CatalogSource
	key := client.ObjectKey{Namespace: m.SourceNamespace, Name: m.Source}
	if mig.Journal == nil && m.RegistryAddress == "" && mig.Client.Get(ctx, key, &cs) == nil && olm.NeedsPortForward(&cs) {
		ps = append(ps,
			kube.Permission{Verb: "list", Resource: "pods", Namespace: m.SourceNamespace},
			kube.Permission{Verb: "create", Resource: "pods", Subresource: "portforward", Namespace: m.SourceNamespace})
	}
	return ps
}

// checkRecordedTarget refuses to resume an earlier run towards another target.
func (m *Migrate) checkRecordedTarget(j *migration.Journal, plan *Plan) error {
	if plan.To.Source != m.Source || plan.To.SourceNamespace != m.SourceNamespace || (m.Channel != "" && m.Channel != plan.To.Channel) {
		state := "an unfinished"
		if j.Completed() {
			state = "a completed"
		}
		return fmt.Errorf("ConfigMap %s records %s migration to catalog %s/%s, channel %s: run with those flags to resume it, or delete the ConfigMap to plan a new one",
			j.Ref(), state, plan.To.SourceNamespace, plan.To.Source, plan.To.Channel)
	}
	return nil
}

// checkRecordedSubscription refuses to resume a migration whose journal no longer matches the
// Subscription: acting on it would skip a switch that did not happen, or undo someone's change.
// A Subscription back on its original catalog after the switch was recorded was most likely
// restored with the command a failed run printed.
func checkRecordedSubscription(ctx context.Context, c client.Client, j *migration.Journal, plan *Plan) error {
	ref := plan.Namespace + "/" + plan.Name
	var sub operatorsv1alpha1.Subscription
	switch err := c.Get(ctx, client.ObjectKey{Namespace: plan.Namespace, Name: plan.Name}, &sub); {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("ConfigMap %s records a migration of Subscription %s, which no longer exists: nothing was changed; delete the ConfigMap (%s) once you no longer need the original spec it keeps",
			j.Ref(), ref, j.DeleteCommand())
	case err != nil:
		return fmt.Errorf("reading Subscription %s: %w", ref, err)
	}
	current := endpointOf(&sub)
	switch {
	case j.Done(switchSourceStep) && current == plan.From:
		return fmt.Errorf("ConfigMap %s records the switch of Subscription %s to catalog %s/%s as done, but the Subscription is on its original catalog %s/%s again (put back after the migration stopped?): nothing was changed; to migrate it again, delete the ConfigMap (%s) and run again",
			j.Ref(), ref, plan.To.SourceNamespace, plan.To.Source, plan.From.SourceNamespace, plan.From.Source, j.DeleteCommand())
	case j.Done(switchSourceStep) && current != plan.To:
		return fmt.Errorf("Subscription %s changed since ConfigMap %s recorded its switch: %s: nothing was changed; check who changed it, then delete the ConfigMap (%s) and run again",
			ref, j.Ref(), describeChange(&sub, plan.To), j.DeleteCommand())
	case !j.Done(switchSourceStep) && current != plan.From && current != plan.To:
		return fmt.Errorf("Subscription %s changed since ConfigMap %s recorded the plan: %s: nothing was changed; check who changed it, then delete the ConfigMap (%s) and run again",
			ref, j.Ref(), describeChange(&sub, plan.From), j.DeleteCommand())
	}
	return nil
}

// Problems names what makes a plan read from a journal unfit to act on.
func (p *Plan) Problems(namespace, _ string) []string {
	var problems []string
	if p.Namespace != namespace {
		problems = append(problems, fmt.Sprintf("it records Subscription %s/%s, but a journal lives next to its Subscription, in namespace %s", p.Namespace, p.Name, namespace))
	}
	if p.Name == "" {
		problems = append(problems, "it names no Subscription (name)")
	}
	// A Subscription may leave its channel to the package's default; the plan's target never does.
	if p.From.Source == "" || p.From.SourceNamespace == "" {
		problems = append(problems, fmt.Sprintf("its from lacks a source or sourceNamespace: %+v", p.From))
	}
	if p.To.Source == "" || p.To.SourceNamespace == "" || p.To.Channel == "" {
		problems = append(problems, fmt.Sprintf("its to lacks a source, sourceNamespace or channel: %+v", p.To))
	}
	if p.Upgrade == nil || p.Upgrade.Head == "" {
		problems = append(problems, "it records no CSV to upgrade to (upgrade.head)")
	}
	if o := p.OriginalSpec; o.Package != efs.Package || o.CatalogSource != p.From.Source || o.CatalogSourceNamespace != p.From.SourceNamespace || o.Channel != p.From.Channel {
		problems = append(problems, fmt.Sprintf("its originalSpec (package %s, catalog %s/%s, channel %s), the spec a failure restores, is not the package %s on its from catalog",
			o.Package, o.CatalogSourceNamespace, o.CatalogSource, o.Channel, efs.Package))
	}
	return problems
}

// plan asks the target catalog how the Subscription's CSV upgrades, and records what must
// keep working.
func (m *Migrate) plan(ctx context.Context, c client.Client, config *rest.Config, sub *operatorsv1alpha1.Subscription) (*Plan, error) {
	ref := sub.Namespace + "/" + sub.Name
	stuck, replaced, err := stuckSwitch(ctx, c, sub, Endpoint{Source: m.Source, SourceNamespace: m.SourceNamespace, Channel: m.Channel})
	if err != nil {
		return nil, err
	}
	if stuck != nil {
		// The installed CSV is the one the failed InstallPlan was to replace, whatever OLM's
		// status of the Subscription now says.
		sub = sub.DeepCopy()
		sub.Status.InstalledCSV, sub.Status.State = replaced, operatorsv1alpha1.SubscriptionStateAtLatest
	}
	switch {
	case sub.Status.InstalledCSV == "":
		return nil, fmt.Errorf("Subscription %s has not installed a CSV yet, so there is nothing to upgrade from:\n%s", ref, olm.DescribeSubscription(sub, nil))
	case sub.Status.State == operatorsv1alpha1.SubscriptionStateUpgradePending:
		return nil, fmt.Errorf("Subscription %s has an upgrade pending: let it finish, or reject its InstallPlan, then run again:\n%s", ref, olm.DescribeSubscription(sub, nil))
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := c.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: sub.Status.InstalledCSV}, &csv); err != nil {
		return nil, fmt.Errorf("reading the installed CSV %s/%s of Subscription %s: %w", sub.Namespace, sub.Status.InstalledCSV, ref, err)
	}
	plan := &Plan{
		Namespace: sub.Namespace, Name: sub.Name,
		InstalledCSV: csv.Name, InstalledVersion: csv.Spec.Version.String(),
		From:         Endpoint{Source: sub.Spec.CatalogSource, SourceNamespace: sub.Spec.CatalogSourceNamespace, Channel: sub.Spec.Channel},
		To:           Endpoint{Source: m.Source, SourceNamespace: m.SourceNamespace, Channel: m.Channel},
		OriginalSpec: *sub.Spec,
		Stuck:        stuck,
	}
	if stuck != nil {
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("Subscription %s was switched to catalog %s/%s before, not by this verb, and OLM failed InstallPlan %s of that upgrade: %s. The migration clears it and lets OLM try again; the spec before that switch is unknown, so a failure cannot print how to restore it",
			ref, plan.From.SourceNamespace, plan.From.Source, stuck.InstallPlan, stuck.Why))
	} else if plan.From.Source == m.Source && plan.From.SourceNamespace == m.SourceNamespace && (m.Channel == "" || m.Channel == plan.From.Channel) {
		return nil, fmt.Errorf("Subscription %s already uses catalog %s/%s, channel %s: there is nothing to migrate", ref, m.SourceNamespace, m.Source, plan.From.Channel)
	}
	warning, err := m.checkCatalogMinor(ctx, c, config)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		plan.Warnings = append(plan.Warnings, warning)
	}
	cs, err := olm.ReadyCatalogSource(ctx, c, m.SourceNamespace, m.Source)
	if err != nil {
		return nil, err
	}
	registry, err := olm.DialRegistry(ctx, c, config, cs, m.RegistryAddress)
	if err != nil {
		return nil, err
	}
	defer registry.Close()
	if plan.To.Channel == "" {
		plan.To.Channel = plan.From.Channel
	}
	installed, err := olmresolver.FromCSV(&csv, efs.Package)
	if err != nil {
		return nil, err
	}
	plan.Upgrade, err = findUpgrade(ctx, registry, plan.To.Channel, installed)
	if noChannel(err) && m.Channel == "" {
		// The target has no channel of the Subscription's name: OLM would stall, so move to the
		// package's default channel, and say so.
		plan.Upgrade, err = findUpgrade(ctx, registry, "", installed)
		if err == nil {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("catalog %s has no channel %s: the Subscription moves to the default channel %s", registry.Name, plan.From.Channel, plan.Upgrade.Channel))
		}
	}
	if err != nil {
		return nil, err
	}
	plan.To.Channel = plan.Upgrade.Channel
	if plan.SharedVolumes, err = checkSharedVolumes(ctx, config, c, registry.Client(), registry.Name, plan.Upgrade); err != nil {
		return nil, err
	}

	var ds appsv1.DaemonSet
	switch err := c.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: efs.NodeDaemonSet}, &ds); {
	case apierrors.IsNotFound(err):
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("no EFS driver DaemonSet %s/%s: there is no running driver to check", sub.Namespace, efs.NodeDaemonSet))
	case err != nil:
		return nil, fmt.Errorf("reading the EFS driver DaemonSet %s/%s: %w", sub.Namespace, efs.NodeDaemonSet, err)
	default:
		plan.DriverDaemonSetUID = ds.UID
	}
	if warning := monitoringWarning(ctx, c, sub.Namespace); warning != "" {
		plan.Warnings = append(plan.Warnings, warning)
	}
	var svs sharedvolumev1alpha1.SharedVolumeList
	if err := c.List(ctx, &svs); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing SharedVolumes: %w", err)
	}
	plan.ReadySharedVolumes = []string{}
	for _, sv := range svs.Items {
		if sv.Status.Phase == sharedvolumev1alpha1.SharedVolumeReady {
			plan.ReadySharedVolumes = append(plan.ReadySharedVolumes, sv.Namespace+"/"+sv.Name)
		} else {
			phase := string(sv.Status.Phase)
			if phase == "" {
				phase = "without a phase"
			}
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("SharedVolume %s/%s is %s, not Ready, before the migration: it is not checked", sv.Namespace, sv.Name, phase))
		}
	}
	return plan, nil
}

// checkCatalogMinor refuses a target catalog built for another OpenShift minor than the
// cluster's: each minor's index holds that minor's builds, whose sidecars and
// olm.maxOpenShiftVersion are for it, and the Subscription would install one on a cluster it was
// not built for. The catalog's minor is its image's tag (v4.N), as OpenShift names its indexes and
// `csi-olm release` its catalog images. What cannot be told, a cluster that names no release or a
// catalog served by address or digest alone, is a warning.
func (m *Migrate) checkCatalogMinor(ctx context.Context, c client.Client, config *rest.Config) (warning string, err error) {
	ref := m.SourceNamespace + "/" + m.Source
	var cs operatorsv1alpha1.CatalogSource
	switch err := c.Get(ctx, client.ObjectKey{Namespace: m.SourceNamespace, Name: m.Source}, &cs); {
	case apierrors.IsNotFound(err):
		return "", nil // olm.ReadyCatalogSource says so, and how to find the sources there are
	case err != nil:
		return "", fmt.Errorf("reading the target CatalogSource %s: %w", ref, err)
	}
	cluster, err := kube.ClusterMinor(ctx, config)
	if errors.Is(err, kube.ErrNoClusterVersion) {
		return fmt.Sprintf("%v: check that catalog %s is the index of the cluster's OpenShift minor", err, ref), nil
	} else if err != nil {
		return "", err
	}
	index, ok := openshift.IndexOfImage(cs.Spec.Image)
	switch {
	case !ok:
		return fmt.Sprintf("catalog %s (image %q) does not name the OpenShift minor it is built for in a v4.N tag: check that it is the %s index, as the cluster runs OpenShift %s", ref, cs.Spec.Image, cluster.Index(), cluster), nil
	case index != cluster:
		return "", fmt.Errorf("catalog %s serves %s, the index of OpenShift %s, but the cluster runs OpenShift %s (ClusterVersion %s): its bundles are built for another minor; point the CatalogSource at the %s index, or pick the source that serves it, and run again: nothing was changed",
			ref, cs.Spec.Image, index, cluster, kube.ClusterVersionName, cluster.Index())
	}
	return "", nil
}

func (m *Migrate) print(plan *Plan) error {
	if m.Output != "text" {
		return migration.Encode(m.Out, m.Output, plan)
	}
	w := m.Out
	fmt.Fprintf(w, "Migrate Subscription %s/%s (package %s)\n", plan.Namespace, plan.Name, efs.Package)
	fmt.Fprintf(w, "  installed:  %s (version %s)\n", plan.InstalledCSV, plan.InstalledVersion)
	fmt.Fprintf(w, "  catalog:    %s/%s -> %s/%s\n", plan.From.SourceNamespace, plan.From.Source, plan.To.SourceNamespace, plan.To.Source)
	fmt.Fprintf(w, "  channel:    %s -> %s\n", plan.From.Channel, plan.To.Channel)
	fmt.Fprintf(w, "  upgrade to: %s, the head of %s", plan.Upgrade.Head, plan.Upgrade.Channel)
	if plan.Upgrade.Edge != "" {
		fmt.Fprintf(w, " (%s by %s)", plan.Upgrade.Edge, plan.Upgrade.Why)
	}
	fmt.Fprintln(w)
	if path := plan.Upgrade.Path; len(path) > 1 {
		fmt.Fprintf(w, "  through:    %s, as OLM's resolver installs them\n", strings.Join(path[:len(path)-1], " -> "))
	}
	if plan.DriverDaemonSetUID != "" {
		fmt.Fprintf(w, "  driver:     DaemonSet %s/%s must keep running\n", plan.Namespace, efs.NodeDaemonSet)
	}
	fmt.Fprintf(w, "  volumes:    %d Ready SharedVolumes must stay Ready\n", len(plan.ReadySharedVolumes))
	if c := plan.SharedVolumes; c != nil && len(c.Bundles) > 0 {
		fmt.Fprintf(w, "  CRD check:  %d SharedVolumes, all valid under the SharedVolume CRD of %s, which OLM checks them against when it runs each InstallPlan (it would fail one on a SharedVolume the CRD refuses)\n",
			c.Checked, strings.Join(c.Bundles, ", "))
	}
	fmt.Fprintln(w, "Steps:")
	for i, s := range plan.Steps {
		fmt.Fprintf(w, "  %d. %s\n", i+1, s)
	}
	for _, warning := range plan.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	return nil
}

// restoreHelp says how to put the Subscription back where it was.
func restoreHelp(plan *Plan, journal string, err error) string {
	kept := fmt.Sprintf("The Subscription's original spec is kept in ConfigMap %s (originalSpec in facts.json).", journal)
	if plan.Stuck != nil {
		kept = "The Subscription was switched before this verb ran; its spec before that switch is unknown."
	}
	if failed := (*installPlanFailed)(nil); errors.As(err, &failed) || plan.Stuck != nil {
		return kept + `
Fix what OLM names, then run the same command again: it deletes the CSV the failed InstallPlan left Pending, points the
Subscription's status back at the installed CSV so that OLM tries the upgrade again, and deletes the failed InstallPlan
once OLM has made a new one. Do not put the source back first: OLM would stay stuck on the CSV the InstallPlan left.`
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]string{
		"source": plan.OriginalSpec.CatalogSource, "sourceNamespace": plan.OriginalSpec.CatalogSourceNamespace, "channel": plan.OriginalSpec.Channel,
	}})
	return fmt.Sprintf(`%s
Run the same command again to resume from the step that stopped, or put the Subscription back on its original catalog:
  kubectl patch subscriptions.operators.coreos.com -n %s %s --type=merge -p '%s'
Once OLM has installed the new CSV, the original catalog has no upgrade from it: restoring the source stops further upgrades but does not downgrade.`,
		kept, plan.Namespace, plan.Name, patch)
}

// remind tells the admin that the supported operator waits for its CR.
func (m *Migrate) remind(ctx context.Context, c client.Client) error {
	var cr operatorv1.ClusterCSIDriver
	err := c.Get(ctx, client.ObjectKey{Name: efs.CRName}, &cr)
	switch {
	case err == nil:
		fmt.Fprintf(m.Out, "ClusterCSIDriver %s exists: the supported operator adopts the running driver in place.\n", efs.CRName)
		return nil
	case apierrors.IsNotFound(err):
		fmt.Fprintf(m.Out, `Reminder: the supported operator does nothing until ClusterCSIDriver %s exists. The community driver
keeps serving every volume meanwhile. Create it to have the operator adopt the driver in place:
  kubectl apply -f - <<EOF
  apiVersion: operator.openshift.io/v1
  kind: ClusterCSIDriver
  metadata:
    name: %s
  spec:
    managementState: Managed
  EOF
`, efs.CRName, efs.CRName)
		return nil
	}
	return fmt.Errorf("reading ClusterCSIDriver %s: %w", efs.CRName, err)
}

// monitoringWarning says when the namespace the operator will keep running in is not one the
// cluster's Prometheus scrapes: OperatorHub labels the namespace it installs the certified
// operator into, but a switched Subscription keeps the community install's namespace, and the
// operator's alert that the driver is not enabled could never fire there. Labelling it is the
// admin's call: in a shared namespace such as openshift-operators, it also lets the cluster's
// Prometheus scrape every other operator's ServiceMonitor there.
func monitoringWarning(ctx context.Context, c client.Client, namespace string) string {
	var ns corev1.Namespace
	switch err := c.Get(ctx, client.ObjectKey{Name: namespace}, &ns); {
	case err != nil:
		return fmt.Sprintf("cannot tell whether the cluster's Prometheus scrapes namespace %s, where the operator keeps running: %v", namespace, err)
	case ns.Labels[efs.ClusterMonitoringLabel] == "true":
		return ""
	}
	return fmt.Sprintf("the cluster's Prometheus does not scrape namespace %s, where the operator keeps running (no label %s=true), so its %s alert cannot fire there; "+
		"to let it: oc label namespace %s %s=true (this also lets Prometheus scrape every other ServiceMonitor of %s)",
		namespace, efs.ClusterMonitoringLabel, efs.NotEnabledAlert, namespace, efs.ClusterMonitoringLabel, namespace)
}
