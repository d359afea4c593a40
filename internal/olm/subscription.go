// Package olm reads what OLM knows about an installed operator: its Subscription, its
// CatalogSource and the catalog's registry, for the csi-olm verbs that migrate installations.
package olm

import (
	"context"
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SubscriptionsOf returns the Subscriptions of a package in every namespace, whatever their
// catalog source.
func SubscriptionsOf(ctx context.Context, c client.Reader, pkg string) ([]operatorsv1alpha1.Subscription, error) {
	var list operatorsv1alpha1.SubscriptionList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing Subscriptions in every namespace: %w", err)
	}
	var subs []operatorsv1alpha1.Subscription
	for _, s := range list.Items {
		if s.Spec != nil && s.Spec.Package == pkg {
			subs = append(subs, s)
		}
	}
	return subs, nil
}

// TheSubscriptionOf returns the one Subscription of a package. None, or more than one, is an
// error that says what was found: a migration must know which installation it moves.
func TheSubscriptionOf(ctx context.Context, c client.Reader, pkg string) (*operatorsv1alpha1.Subscription, error) {
	subs, err := SubscriptionsOf(ctx, c, pkg)
	if err != nil {
		return nil, err
	}
	switch len(subs) {
	case 0:
		return nil, fmt.Errorf("package %s is not installed: no Subscription in any namespace names it", pkg)
	case 1:
		return &subs[0], nil
	}
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = fmt.Sprintf("%s/%s (source %s/%s)", s.Namespace, s.Name, s.Spec.CatalogSourceNamespace, s.Spec.CatalogSource)
	}
	return nil, fmt.Errorf("package %s has %d Subscriptions, but OLM installs it once per cluster: %s; delete the ones that should not exist and run again",
		pkg, len(subs), strings.Join(names, ", "))
}

// DescribeSubscription renders the parts of a Subscription's status that explain its progress.
func DescribeSubscription(sub *operatorsv1alpha1.Subscription, getErr error) string {
	if getErr != nil {
		return "  cannot read it: " + getErr.Error()
	}
	var b strings.Builder
	if sub.Spec != nil {
		fmt.Fprintf(&b, "  spec: source=%s/%s package=%s channel=%s\n", sub.Spec.CatalogSourceNamespace, sub.Spec.CatalogSource, sub.Spec.Package, sub.Spec.Channel)
	}
	fmt.Fprintf(&b, "  state=%q currentCSV=%q installedCSV=%q", sub.Status.State, sub.Status.CurrentCSV, sub.Status.InstalledCSV)
	if ip := sub.Status.InstallPlanRef; ip != nil {
		fmt.Fprintf(&b, " installPlan=%s", ip.Name)
	}
	b.WriteString("\n  conditions:")
	if len(sub.Status.Conditions) == 0 {
		b.WriteString(" none")
	}
	for _, c := range sub.Status.Conditions {
		fmt.Fprintf(&b, "\n    %s=%s reason=%s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// AtLatestKnown is true once a Subscription has installed the newest CSV its channel offers.
func AtLatestKnown(csv string) func(*operatorsv1alpha1.Subscription) bool {
	return func(s *operatorsv1alpha1.Subscription) bool {
		return s.Status.State == operatorsv1alpha1.SubscriptionStateAtLatest && (csv == "" || s.Status.InstalledCSV == csv)
	}
}

// ReadyCatalogSource returns a CatalogSource whose registry OLM reports READY.
func ReadyCatalogSource(ctx context.Context, c client.Reader, namespace, name string) (*operatorsv1alpha1.CatalogSource, error) {
	var cs operatorsv1alpha1.CatalogSource
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cs)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("CatalogSource %s/%s not found: `kubectl get catalogsources -A` lists the cluster's catalogs", namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading CatalogSource %s/%s: %w", namespace, name, err)
	}
	state := "unknown"
	if st := cs.Status.GRPCConnectionState; st != nil {
		if st.LastObservedState == "READY" {
			return &cs, nil
		}
		state = st.LastObservedState
	}
	return nil, fmt.Errorf("CatalogSource %s/%s is not READY (connection state %s): OLM cannot install from it until its registry answers",
		namespace, name, state)
}
