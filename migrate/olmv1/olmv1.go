// Package olmv1 is the `csi-olm migrate olm-v1` verb: it moves an operator installed by OLM v0
// (a Subscription and its CSV) to an OLM v1 ClusterExtension pinned to the same bundle version,
// and back. OLM v1 takes over the objects OLM v0 made, in place: the CRDs with every custom
// resource, the operator's Deployment and ServiceAccount, and everything else of the bundle
// that keeps its name; nothing the operator made (its operands) is touched.
//
// How the hand-over works: operator-controller installs a bundle as a Helm release named after
// the ClusterExtension, and Helm takes over an existing object only when it carries Helm's
// ownership marks naming that release. The verb puts those marks on every object of the bundle
// that exists, lets OLM v0 go first (the CSV deleted with the orphan policy, so that the garbage
// collector takes its owner references off instead of deleting anything: OLM v0, which keeps
// applying its CSV, would otherwise fight OLM v1 over the Deployment), then creates the
// ClusterExtension, which adopts the marked objects (its controller owner reference). Only once
// OLM v1 grants the operator its permissions does OLM v0's own RBAC go.
package olmv1

import (
	"context"
	"fmt"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/csi-olm/csi-olm/migrate"
	"github.com/csi-olm/csi-olm/migrate/internal/migration"
)

const (
	verb     = "olm-v1"
	backVerb = "olm-v1-back"
	// fieldManager names the verb's writes.
	fieldManager = "csi-olm-migrate"
)

// Migrate moves one OLM v0 install to OLM v1, or, with Back, the migration recorded on the
// cluster back to OLM v0.
type Migrate struct {
	migrate.Options
	// Package is the OLM package to move.
	Package string
	// Catalog is the ClusterCatalog OLM v1 installs from.
	Catalog string
	// Extension names the ClusterExtension; empty is the package's name.
	Extension string
	// ServiceAccount is the ServiceAccount, in the install namespace, OLM v1 installs with;
	// empty is "<extension>-installer".
	ServiceAccount string
	// Back undoes the recorded migration, from whatever step it reached.
	Back bool
}

// Object names one object on the cluster, with the UID it must keep.
type Object struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid,omitempty"`
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Census counts the objects of one kind that existed when the migration was planned, and
// digests their namespaces, names and UIDs: the same digest afterwards proves that none of them
// was lost or replaced, at any number of objects, in a journal of bounded size.
type Census struct {
	// What names the objects for people.
	What       string `json:"what"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Count      int    `json:"count"`
	Digest     string `json:"digest"`
}

// NodePod is a pod of a DaemonSet of the install namespace, which must keep running without a
// restart: a node plugin that restarts unmounts nothing, but one that is replaced is a window in
// which no volume can be mounted on its node.
type NodePod struct {
	Object
	Restarts int32 `json:"restarts"`
}

// Plan is what the migration does and what it must keep. It is printed, and recorded in the
// journal before the first change; a resumed run, and the way back, act on the recorded one.
type Plan struct {
	Package   string `json:"package"`
	Namespace string `json:"namespace"`
	// Subscription is the OLM v0 Subscription, as it was: the way back creates it again.
	Subscription     Object                             `json:"subscription"`
	SubscriptionSpec operatorsv1alpha1.SubscriptionSpec `json:"subscriptionSpec"`
	OperatorGroup    string                             `json:"operatorGroup"`
	CSV              Object                             `json:"csv"`
	Version          string                             `json:"version"`
	Catalog          string                             `json:"catalog"`
	CatalogImage     string                             `json:"catalogImage"`
	BundleImage      string                             `json:"bundleImage"`
	Extension        string                             `json:"extension"`
	ServiceAccount   string                             `json:"serviceAccount"`
	// Adopted are the objects OLM v1 takes over, each keeping its UID.
	Adopted []Object `json:"adopted"`
	// Created are the objects of the bundle that do not exist yet, which OLM v1 creates.
	Created []string `json:"created,omitempty"`
	// Retired are OLM v0's objects that go with the CSV (its RBAC under OLM v0's names): OLM v1
	// grants the same rules under its own.
	Retired []Object `json:"retired,omitempty"`
	// Unchanged are the operator's operands and their CRs: the migration must not touch them.
	Unchanged []Object  `json:"unchanged"`
	NodePods  []NodePod `json:"nodePods"`
	// Censuses are the custom resources of the bundle's CRDs and the cluster's volumes and
	// claims, counted as of RecordedAt.
	Censuses   []Census  `json:"censuses"`
	RecordedAt time.Time `json:"recordedAt"`
	// NextUpgrade is where OLM v1 takes the extension once its version range allows an upgrade.
	NextUpgrade string   `json:"nextUpgrade"`
	Warnings    []string `json:"warnings,omitempty"`
	Steps       []string `json:"steps"`
}

// Problems names what makes a plan read from a journal unfit to act on.
func (p *Plan) Problems(namespace, target string) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if p.Namespace != namespace {
		add("it records an install in namespace %s, but a journal lives in the install's namespace, %s", p.Namespace, namespace)
	}
	if p.Package != target {
		add("it records package %q, but it is the journal of package %s", p.Package, target)
	}
	for what, v := range map[string]string{
		"subscription.name": p.Subscription.Name, "csv.name": p.CSV.Name, "csv.uid": string(p.CSV.UID), "version": p.Version,
		"catalog": p.Catalog, "extension": p.Extension, "serviceAccount": p.ServiceAccount, "operatorGroup": p.OperatorGroup,
	} {
		if v == "" {
			add("it has no %s", what)
		}
	}
	if p.SubscriptionSpec.Package != p.Package {
		add("its subscriptionSpec, the Subscription the way back creates again, is of package %q", p.SubscriptionSpec.Package)
	}
	for _, o := range p.Adopted {
		if o.Kind == "" || o.Name == "" || o.UID == "" {
			add("adopted object %+v lacks a kind, a name or a UID", o)
		}
	}
	return problems
}

// Run plans the migration, or its way back, prints the plan and, unless it is a dry run,
// carries it out.
func (m *Migrate) Run(ctx context.Context) error {
	if err := migration.CheckFormat(m.Output); err != nil {
		return err
	}
	if m.Package == "" {
		return fmt.Errorf("--package is empty: name the OLM package to move")
	}
	if m.Back {
		return m.runBack(ctx)
	}
	if m.Catalog == "" {
		return fmt.Errorf("--catalog is empty: name the ClusterCatalog OLM v1 installs %s from (kubectl get clustercatalogs)", m.Package)
	}
	return m.runForward(ctx)
}

// backCommand is the command that goes back to OLM v0 from any step of the migration.
func (m *Migrate) backCommand(plan *Plan) string {
	return fmt.Sprintf("csi-olm migrate olm-v1 --back --package %s --confirm", plan.Package)
}

func (m *Migrate) print(plan *Plan, back bool) error {
	if m.Output != "text" {
		return migration.Encode(m.Out, m.Output, plan)
	}
	w := m.Out
	if back {
		fmt.Fprintf(w, "Move package %s back from ClusterExtension %s to OLM v0 (Subscription %s/%s)\n", plan.Package, plan.Extension, plan.Namespace, plan.Subscription.Name)
	} else {
		fmt.Fprintf(w, "Move package %s from OLM v0 to OLM v1\n", plan.Package)
	}
	fmt.Fprintf(w, "  installed:      %s (version %s) in namespace %s, Subscription %s, OperatorGroup %s\n", plan.CSV.Name, plan.Version, plan.Namespace, plan.Subscription.Name, plan.OperatorGroup)
	fmt.Fprintf(w, "  extension:      ClusterExtension %s, version %s exactly, from ClusterCatalog %s (%s), installing as ServiceAccount %s/%s\n",
		plan.Extension, plan.Version, plan.Catalog, plan.CatalogImage, plan.Namespace, plan.ServiceAccount)
	fmt.Fprintf(w, "  bundle:         %s, which OLM v1 installs\n", plan.BundleImage)
	fmt.Fprintf(w, "  next upgrade:   %s\n", plan.NextUpgrade)
	fmt.Fprintf(w, "  adopted by OLM v1, same UIDs (%d):\n", len(plan.Adopted))
	for _, o := range plan.Adopted {
		fmt.Fprintf(w, "    - %s\n", o)
	}
	if len(plan.Created) > 0 {
		fmt.Fprintf(w, "  created by OLM v1: %s, and the operator's RBAC under OLM v1's names\n", strings.Join(plan.Created, ", "))
	} else {
		fmt.Fprintln(w, "  created by OLM v1: the operator's RBAC under OLM v1's names")
	}
	fmt.Fprintf(w, "  OLM v0's own, deleted once OLM v1 grants the same (%d):\n", len(plan.Retired))
	for _, o := range plan.Retired {
		fmt.Fprintf(w, "    - %s\n", o)
	}
	fmt.Fprintf(w, "  untouched, same UIDs (%d):\n", len(plan.Unchanged))
	for _, o := range plan.Unchanged {
		fmt.Fprintf(w, "    - %s\n", o)
	}
	if len(plan.NodePods) > 0 {
		fmt.Fprintf(w, "  node plugins:   %d pods keep running, no restart\n", len(plan.NodePods))
	}
	for _, c := range plan.Censuses {
		fmt.Fprintf(w, "  kept:           %d %s\n", c.Count, c.What)
	}
	fmt.Fprintf(w, "  stays:          OperatorGroup %s/%s (the way back needs it)\n", plan.Namespace, plan.OperatorGroup)
	fmt.Fprintln(w, "Steps:")
	for i, s := range plan.Steps {
		fmt.Fprintf(w, "  %d. %s\n", i+1, s)
	}
	if !back {
		fmt.Fprintf(w, "Back to OLM v0, from any step: %s\n", m.backCommand(plan))
	}
	for _, warning := range plan.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warning)
	}
	return nil
}
