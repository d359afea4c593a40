// Package cso is the `csi-olm migrate cso` verb: it hands an OLM-installed AWS EBS or OpenStack
// Manila CSI driver operator over to the cluster-storage-operator (docs/architecture.md#upgrades). OLM removes
// the old operator; its CR goes without its finalizer running, so the driver keeps serving
// volumes; and ClusterCSIDriver asks the CSO-era operator to take the driver over.
package cso

import (
	"context"
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/names/ebs"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/migrate"
	"github.com/csi-olm/csi-olm/migrate/internal/migration"
)

const verb = "cso"

// Migrate moves one driver from its OLM-installed operator to the cluster-storage-operator.
type Migrate struct {
	migrate.Options
	Driver string
	// AcceptNamespaceMove acknowledges that the CSO-era EBS operator runs a new driver in
	// another namespace instead of adopting the running one.
	AcceptNamespaceMove bool
}

// Plan is what the migration does. It is printed, and recorded in the journal before the first
// change: once the Subscription and CSV are deleted, nothing else remembers them.
type Plan struct {
	Driver       string `json:"driver"`
	Namespace    string `json:"namespace"`
	Subscription string `json:"subscription"`
	Source       string `json:"source"`
	CSV          string `json:"csv"`
	// OperatorDeployments are the CSV's Deployments, with the selectors of their pods.
	OperatorDeployments map[string]map[string]string `json:"operatorDeployments"`
	CR                  string                       `json:"cr"`
	ClusterCSIDriver    string                       `json:"clusterCSIDriver"`
	Operands            []Operand                    `json:"operands"`
	Warnings            []string                     `json:"warnings,omitempty"`
	Steps               []string                     `json:"steps"`
}

// Run plans the migration, prints the plan and, unless it is a dry run, carries it out.
func (m *Migrate) Run(ctx context.Context) error {
	d, err := lookupDriver(m.Driver)
	if err != nil {
		return err
	}
	if err := migration.CheckFormat(m.Output); err != nil {
		return err
	}
	config, err := m.RESTConfig()
	if err != nil {
		return err
	}
	plan := &Plan{}
	mig, err := migration.Begin(ctx, config, verb, d.name, d.pkg, stepNames, plan, m.Progress)
	if err != nil {
		return err
	}
	// Reading the cluster needs these permissions too: check them all before planning, so that
	// a user who lacks some learns every one at once.
	if err := kube.CheckAccess(ctx, mig.Kube, d.permissions(mig.Namespace)); err != nil {
		return err
	}
	if mig.Journal == nil {
		if plan, err = m.plan(ctx, mig.Client, d, mig.Subscription); err != nil {
			return err
		}
	}
	steps := m.steps(mig.Client, d, plan)
	plan.Steps = migration.Describe(steps)
	if err := m.print(d, plan); err != nil {
		return err
	}
	if m.DryRun {
		fmt.Fprintln(m.Progress, migration.DryRunNote)
		return nil
	}
	if d.name == "ebs" && !m.AcceptNamespaceMove {
		return fmt.Errorf("the CSO-era AWS EBS operator does not adopt the running EBS driver (see the plan): read what you must do afterwards, then run again with --accept-namespace-move; nothing was changed")
	}
	j, err := mig.Carry(ctx, plan, steps, m.Progress)
	if err != nil {
		if j != nil {
			return fmt.Errorf("%w\nthe journal is ConfigMap %s: run the same command again to resume", err, j.Ref())
		}
		return err
	}
	fmt.Fprintf(m.Out, "%s is handed over to the cluster-storage-operator: ClusterCSIDriver %s exists and every operand is in place; the migration is recorded in ConfigMap %s\n",
		d.pkg, d.clusterCSIDriver, j.Ref())
	if d.name == "ebs" {
		fmt.Fprint(m.Out, ebsAfterwards(plan))
	}
	return nil
}

func (d driver) permissions(namespace string) []kube.Permission {
	ps := []kube.Permission{
		{Verb: "get", Group: "operators.coreos.com", Resource: "subscriptions", Namespace: namespace},
		{Verb: "delete", Group: "operators.coreos.com", Resource: "subscriptions", Namespace: namespace},
		{Verb: "list", Group: "operators.coreos.com", Resource: "installplans", Namespace: namespace},
		{Verb: "delete", Group: "operators.coreos.com", Resource: "installplans", Namespace: namespace},
		{Verb: "get", Group: "operators.coreos.com", Resource: "clusterserviceversions", Namespace: namespace},
		{Verb: "delete", Group: "operators.coreos.com", Resource: "clusterserviceversions", Namespace: namespace},
		{Verb: "get", Group: "apps", Resource: "deployments", Namespace: namespace},
		{Verb: "list", Resource: "pods", Namespace: namespace},
		{Verb: "create", Resource: "configmaps", Namespace: namespace},
		{Verb: "update", Resource: "configmaps", Namespace: namespace},
		{Verb: "get", Group: "csi.openshift.io", Resource: d.crResource},
		{Verb: "patch", Group: "csi.openshift.io", Resource: d.crResource},
		{Verb: "delete", Group: "csi.openshift.io", Resource: d.crResource},
		{Verb: "get", Group: operatorv1.GroupName, Resource: "clustercsidrivers"},
		{Verb: "create", Group: operatorv1.GroupName, Resource: "clustercsidrivers"},
		{Verb: "get", Group: "storage.k8s.io", Resource: "csidrivers"},
	}
	for _, o := range d.operands {
		if o.Namespace != "" {
			ps = append(ps, kube.Permission{Verb: "get", Group: "apps", Resource: map[string]string{"Deployment": "deployments", "DaemonSet": "daemonsets"}[o.Kind], Namespace: o.Namespace})
		}
	}
	return ps
}

// Problems names what makes a plan read from a journal unfit to act on.
func (p *Plan) Problems(namespace, driver string) []string {
	var problems []string
	if p.Driver != driver {
		problems = append(problems, fmt.Sprintf("it records driver %q, not %s", p.Driver, driver))
	}
	if p.Namespace != namespace {
		problems = append(problems, fmt.Sprintf("it records Subscription %s/%s, but a journal lives next to its Subscription, in namespace %s", p.Namespace, p.Subscription, namespace))
	}
	if p.Subscription == "" || p.CSV == "" || p.ClusterCSIDriver == "" || p.CR == "" {
		problems = append(problems, "it lacks the Subscription, CSV, old CR or ClusterCSIDriver to hand over (subscription, csv, cr, clusterCSIDriver)")
	}
	return problems
}

// plan checks the cluster can take the installation over, and checks the operands.
func (m *Migrate) plan(ctx context.Context, c client.Client, d driver, sub *operatorsv1alpha1.Subscription) (*Plan, error) {
	if sub.Status.CurrentCSV == "" {
		return nil, fmt.Errorf("Subscription %s/%s has no current CSV, so OLM installed nothing to hand over yet:\n%s",
			sub.Namespace, sub.Name, olm.DescribeSubscription(sub, nil))
	}
	plan := &Plan{
		Driver: d.name, Namespace: sub.Namespace, Subscription: sub.Name,
		Source: sub.Spec.CatalogSourceNamespace + "/" + sub.Spec.CatalogSource,
		CSV:    sub.Status.CurrentCSV, OperatorDeployments: map[string]map[string]string{},
		CR: d.crKind + " cluster", ClusterCSIDriver: d.clusterCSIDriver,
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	switch err := c.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: plan.CSV}, &csv); {
	case apierrors.IsNotFound(err):
		plan.OperatorDeployments[d.operator] = nil
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("CSV %s/%s is already gone: waiting for Deployment %s only", sub.Namespace, plan.CSV, d.operator))
	case err != nil:
		return nil, fmt.Errorf("reading CSV %s/%s: %w", sub.Namespace, plan.CSV, err)
	default:
		for _, spec := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
			var selector map[string]string
			if spec.Spec.Selector != nil {
				selector = spec.Spec.Selector.MatchLabels
			}
			plan.OperatorDeployments[spec.Name] = selector
		}
	}
	var cr operatorv1.ClusterCSIDriver
	switch err := c.Get(ctx, client.ObjectKey{Name: d.clusterCSIDriver}, &cr); {
	case meta.IsNoMatchError(err):
		return nil, fmt.Errorf("this cluster does not serve ClusterCSIDriver (operator.openshift.io/v1), so no cluster-storage-operator can take the driver over: upgrade the cluster to OpenShift 4.6 or later first")
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading ClusterCSIDriver %s: %w", d.clusterCSIDriver, err)
	default:
		plan.Warnings = append(plan.Warnings, fmt.Sprintf("ClusterCSIDriver %s exists already: it is kept as it is", d.clusterCSIDriver))
	}
	for _, o := range d.operands {
		obj := o.object()
		switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, obj); {
		case apierrors.IsNotFound(err):
			o.Note = "missing: the CSO-era operator creates it"
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", o, err)
		default:
			o.UID = string(obj.GetUID())
			o.Adopted = true
		}
		if o.Namespace != "" && o.Namespace != d.operandNamespace {
			o.Adopted = false
			o.Note = fmt.Sprintf("not adopted: the CSO-era operator runs its own in namespace %s", d.operandNamespace)
		}
		plan.Operands = append(plan.Operands, o)
	}
	return plan, nil
}

func (m *Migrate) print(d driver, plan *Plan) error {
	if m.Output != "text" {
		return migration.Encode(m.Out, m.Output, plan)
	}
	w := m.Out
	fmt.Fprintf(w, "Hand %s over to the cluster-storage-operator\n", d.pkg)
	fmt.Fprintf(w, "  Subscription: %s/%s (catalog %s)\n", plan.Namespace, plan.Subscription, plan.Source)
	fmt.Fprintf(w, "  CSV:          %s\n", plan.CSV)
	fmt.Fprintf(w, "  old CR:       %s (its finalizer %s never runs)\n", plan.CR, d.finalizer)
	fmt.Fprintf(w, "  new CR:       ClusterCSIDriver %s\n", plan.ClusterCSIDriver)
	fmt.Fprintln(w, "Operands (none is deleted):")
	for _, o := range plan.Operands {
		state := "adopted by name"
		if !o.Adopted {
			state = o.Note
		}
		fmt.Fprintf(w, "  %-70s %s\n", o.String(), state)
	}
	fmt.Fprintln(w, "Steps:")
	for i, s := range plan.Steps {
		fmt.Fprintf(w, "  %d. %s\n", i+1, s)
	}
	for _, warning := range plan.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	if d.name == "ebs" && m.DryRun {
		fmt.Fprint(w, ebsAfterwards(plan))
	}
	return nil
}

// ebsAfterwards is what the admin must do for EBS, whose CSO-era operator runs the driver in
// another namespace and therefore cannot adopt the OLM-era one.
func ebsAfterwards(plan *Plan) string {
	var old []string
	for _, o := range plan.Operands {
		if o.Namespace != "" && o.UID != "" {
			old = append(old, "    "+o.String())
		}
	}
	if len(old) == 0 {
		return ""
	}
	return fmt.Sprintf(`Action required for EBS: the CSO-era operator runs the driver in namespace %s and does not adopt
%s
Both drivers register the same CSI name, ebs.csi.aws.com, on every node. Once the new driver runs,
  1. wait until the new node DaemonSet is available: kubectl rollout status -n %s daemonset/%s
  2. remove the OLM-era driver: kubectl delete namespace %s
Attached and mounted EBS volumes are not affected: a PersistentVolume names the CSI driver, not its namespace.
`, csoNamespace, strings.Join(old, "\n"), csoNamespace, ebs.NodeName, ebs.OperandNamespace)
}
