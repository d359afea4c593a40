package simulate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/api/client/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
)

// clusterStarts reads every Subscription of a package the target catalog carries that has
// installed a CSV. Each start is that CSV as OLM's csvSource reads it, and beside it the other
// CSVs of its namespace (copies of global operators' CSVs left out, as OLM does). Another CSV
// keeps its Subscription when that Subscription's catalog is one the simulator serves under the
// same name, and is otherwise held where it is: the simulator cannot know what its own catalog
// would offer it.
func clusterStarts(ctx context.Context, opts *kube.ClusterOptions, sim *olmv0.Simulator, target, dir string) ([]olmv0.Start, error) {
	cfg, err := opts.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	subs, err := cs.OperatorsV1alpha1().Subscriptions(opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Subscriptions: %w", err)
	}
	sort.Slice(subs.Items, func(i, j int) bool {
		a, b := subs.Items[i], subs.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	tc := sim.Index(target)
	namespaces := map[string][]operatorsv1alpha1.ClusterServiceVersion{}
	var starts []olmv0.Start
	var others []string
	for i := range subs.Items {
		sub := &subs.Items[i]
		name := sub.Namespace + "/" + sub.Name
		if sub.Spec == nil || tc.Package(sub.Spec.Package) == nil {
			others = append(others, name)
			continue
		}
		if sub.Status.InstalledCSV == "" {
			others = append(others, name+" (nothing installed yet)")
			continue
		}
		csvs, ok := namespaces[sub.Namespace]
		if !ok {
			list, err := cs.OperatorsV1alpha1().ClusterServiceVersions(sub.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing the CSVs of namespace %s: %w", sub.Namespace, err)
			}
			csvs = list.Items
			namespaces[sub.Namespace] = csvs
		}
		csv, err := cs.OperatorsV1alpha1().ClusterServiceVersions(sub.Namespace).Get(ctx, sub.Status.InstalledCSV, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Deleted since the Subscription was read: OLM has nothing installed to move either.
			others = append(others, fmt.Sprintf("%s (its CSV %s is gone)", name, sub.Status.InstalledCSV))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the CSV Subscription %s installed: %w", name, err)
		}
		installed, err := olmresolver.FromCSV(csv, sub.Spec.Package)
		if err != nil {
			return nil, fmt.Errorf("Subscription %s: %w", name, err)
		}
		st := olmv0.Start{CSV: csv.Name, Package: sub.Spec.Package, Channel: sub.Spec.Channel, Subscription: name, Installed: &installed}
		for j := range csvs {
			other := &csvs[j]
			if other.Name == csv.Name || other.IsCopied() {
				continue
			}
			e, err := existingFromCluster(sim, other, subs.Items)
			if err != nil {
				return nil, err
			}
			st.Existing = append(st.Existing, e)
		}
		starts = append(starts, st)
	}
	if len(starts) == 0 {
		return nil, fmt.Errorf("no Subscription of the cluster has installed a package of %s (Subscriptions: %s)", dir, orNone(others))
	}
	return starts, nil
}

// existingFromCluster is another CSV of a start's namespace, with its Subscription when the
// simulator serves that Subscription's catalog.
func existingFromCluster(sim *olmv0.Simulator, csv *operatorsv1alpha1.ClusterServiceVersion, subs []operatorsv1alpha1.Subscription) (olmv0.Existing, error) {
	var owner *operatorsv1alpha1.Subscription
	for i := range subs {
		if s := &subs[i]; s.Namespace == csv.Namespace && s.Status.InstalledCSV == csv.Name && s.Spec != nil {
			owner = s
		}
	}
	pkg := ""
	if owner != nil {
		pkg = owner.Spec.Package
	}
	op, err := olmresolver.FromCSV(csv, pkg)
	if err != nil {
		return olmv0.Existing{}, err
	}
	if owner != nil && sim.Index(owner.Spec.CatalogSource) != nil {
		op.Subscription = &olmresolver.Subscription{Name: owner.Name, Package: owner.Spec.Package, Channel: owner.Spec.Channel, Catalog: owner.Spec.CatalogSource}
	}
	return olmv0.Existing{Operator: op, From: "cluster"}, nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
