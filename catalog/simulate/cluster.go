package simulate

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/api/client/clientset/versioned"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/projection"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/csi-olm/csi-olm/internal/kube"
)

// Installed is an installed CSV as the cluster holds it, for starts read from a cluster.
type Installed struct {
	Version    semver.Version
	Properties []*api.Property
}

// clusterStarts reads every Subscription of a package the target catalog carries that has
// installed a CSV, and that CSV as OLM's csvSource reads it: its spec.version and the properties
// OLM projected onto it (or, lacking them, the package property OLM infers from the
// Subscription).
func clusterStarts(ctx context.Context, opts *kube.ClusterOptions, target *loaded) ([]Start, error) {
	cfg, err := opts.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	subs, err := cs.OperatorsV1alpha1().Subscriptions(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Subscriptions: %w", err)
	}
	sort.Slice(subs.Items, func(i, j int) bool {
		a, b := subs.Items[i], subs.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	var starts []Start
	var others []string
	for i := range subs.Items {
		sub := &subs.Items[i]
		name := sub.Namespace + "/" + sub.Name
		if sub.Spec == nil || target.pkg(sub.Spec.Package) == nil {
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
			return nil, fmt.Errorf("reading the CSV Subscription %s installed: %w", name, err)
		}
		installed, err := installedFromCSV(csv, sub.Spec.Package)
		if err != nil {
			return nil, fmt.Errorf("Subscription %s: %w", name, err)
		}
		starts = append(starts, Start{CSV: csv.Name, Package: sub.Spec.Package, Channel: sub.Spec.Channel, Subscription: name, Installed: installed})
	}
	if len(starts) == 0 {
		return nil, fmt.Errorf("no Subscription of the cluster has installed a package of %s (Subscriptions: %s)", target.Dir, orNone(others))
	}
	return starts, nil
}

func installedFromCSV(csv *operatorsv1alpha1.ClusterServiceVersion, pkg string) (*Installed, error) {
	in := &Installed{Version: csv.Spec.Version.Version}
	if anno, ok := csv.Annotations[projection.PropertiesAnnotationKey]; ok {
		props, err := projection.PropertyListFromPropertiesAnnotation(anno)
		if err != nil {
			return nil, fmt.Errorf("properties of CSV %s/%s: %w", csv.Namespace, csv.Name, err)
		}
		in.Properties = props
		return in, nil
	}
	p := property.MustBuildPackage(pkg, in.Version.String())
	in.Properties = []*api.Property{{Type: p.Type, Value: string(p.Value)}}
	return in, nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
