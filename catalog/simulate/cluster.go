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
	"github.com/csi-olm/csi-olm/catalog/predict/olmv1"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olmresolver"
)

// subscribed is a Subscription of the cluster with the CSV it installed.
type subscribed struct {
	sub *operatorsv1alpha1.Subscription
	csv *operatorsv1alpha1.ClusterServiceVersion
}

// clusterInstalls reads every Subscription of the cluster, sorted by namespace and name, and of
// those whose package the target carries (has), the CSV each installed. others names the
// Subscriptions passed over, and why.
func clusterInstalls(ctx context.Context, opts *kube.ClusterOptions, has func(pkg string) bool) (cs versioned.Interface, subs []operatorsv1alpha1.Subscription, installs []subscribed, others []string, err error) {
	cfg, err := opts.RESTConfig()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if cs, err = versioned.NewForConfig(cfg); err != nil {
		return nil, nil, nil, nil, err
	}
	list, err := cs.OperatorsV1alpha1().Subscriptions(opts.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("listing Subscriptions: %w", err)
	}
	subs = list.Items
	sort.Slice(subs, func(i, j int) bool {
		a, b := subs[i], subs[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	for i := range subs {
		sub := &subs[i]
		name := sub.Namespace + "/" + sub.Name
		if sub.Spec == nil || !has(sub.Spec.Package) {
			others = append(others, name)
			continue
		}
		if sub.Status.InstalledCSV == "" {
			others = append(others, name+" (nothing installed yet)")
			continue
		}
		csv, err := cs.OperatorsV1alpha1().ClusterServiceVersions(sub.Namespace).Get(ctx, sub.Status.InstalledCSV, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Deleted since the Subscription was read: OLM has nothing installed to move either.
			others = append(others, fmt.Sprintf("%s (its CSV %s is gone)", name, sub.Status.InstalledCSV))
			continue
		}
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("reading the CSV Subscription %s installed: %w", name, err)
		}
		installs = append(installs, subscribed{sub: sub, csv: csv})
	}
	return cs, subs, installs, others, nil
}

// clusterStarts reads every Subscription of a package the target catalog carries that has
// installed a CSV. Each start is that CSV as OLM's csvSource reads it, and beside it the other
// CSVs of its namespace (copies of global operators' CSVs left out, as OLM does). Another CSV
// keeps its Subscription when that Subscription's catalog is one the simulator serves under the
// same name, and is otherwise held where it is: the simulator cannot know what its own catalog
// would offer it.
func clusterStarts(ctx context.Context, opts *kube.ClusterOptions, sim *olmv0.Simulator, target, dir string) ([]olmv0.Start, error) {
	tc := sim.Index(target)
	cs, subs, installs, others, err := clusterInstalls(ctx, opts, func(pkg string) bool { return tc.Package(pkg) != nil })
	if err != nil {
		return nil, err
	}
	namespaces := map[string][]operatorsv1alpha1.ClusterServiceVersion{}
	var starts []olmv0.Start
	for _, in := range installs {
		sub, csv := in.sub, in.csv
		name := sub.Namespace + "/" + sub.Name
		csvs, ok := namespaces[sub.Namespace]
		if !ok {
			list, err := cs.OperatorsV1alpha1().ClusterServiceVersions(sub.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing the CSVs of namespace %s: %w", sub.Namespace, err)
			}
			csvs = list.Items
			namespaces[sub.Namespace] = csvs
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
			e, err := existingFromCluster(sim, other, subs)
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

// clusterV1Starts are the OLM v0 installs of the cluster as ClusterExtensions would start from
// them once moved to OLM v1 (csi-olm migrate olm-v1 pins each to the version OLM v0 runs): each
// Subscription of a package the ClusterCatalogs carry, with its installed CSV as the installed
// bundle. from names the cluster in the report.
func clusterV1Starts(ctx context.Context, opts *kube.ClusterOptions, r *olmv1.Resolver, dir string) ([]v1Start, error) {
	_, _, installs, others, err := clusterInstalls(ctx, opts, r.HasPackage)
	if err != nil {
		return nil, err
	}
	var starts []v1Start
	for _, in := range installs {
		starts = append(starts, v1Start{
			pkg:       in.sub.Spec.Package,
			installed: &olmv1.Installed{Name: in.csv.Name, Version: in.csv.Spec.Version.String()},
			from:      "cluster (Subscription " + in.sub.Namespace + "/" + in.sub.Name + ")",
		})
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
