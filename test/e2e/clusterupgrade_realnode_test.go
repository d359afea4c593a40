package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-lifecycle-manager/pkg/controller/registry/resolver/projection"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/bundle/drivers"
	"github.com/csi-olm/csi-olm/catalog/clusterupgrade"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/test/testutil"
	"github.com/csi-olm/csi-olm/testbed"
)

// efsReleases are the supported EFS operator's releases, each built for one OpenShift minor,
// oldest first.
func efsReleases(tb testing.TB) []definition.Release {
	tb.Helper()
	for _, o := range drivers.All() {
		if o.Package == efsPackage && o.Catalog == definition.Certified {
			releases := slices.Clone(o.Releases)
			slices.SortFunc(releases, func(a, b definition.Release) int {
				return minorOf(tb, a).Compare(minorOf(tb, b))
			})
			return releases
		}
	}
	tb.Fatalf("no operator definition of package %s", efsPackage)
	return nil
}

// efsReleaseFor is the EFS operator's release built for minor m.
func efsReleaseFor(tb testing.TB, m openshift.Minor) definition.Release {
	tb.Helper()
	for _, r := range efsReleases(tb) {
		if minorOf(tb, r) == m {
			return r
		}
	}
	tb.Fatalf("the EFS operator has no release for OpenShift %s", m)
	return definition.Release{}
}

func minorOf(tb testing.TB, r definition.Release) openshift.Minor {
	tb.Helper()
	m, err := openshift.ParseMinor(r.OpenShift)
	if err != nil {
		tb.Fatalf("release %s: %v", r.Version, err)
	}
	return m
}

// clusterRelease is the OpenShift release a flow's cluster runs at minor m.
func clusterRelease(m openshift.Minor) string { return m.String() + ".0" }

// maxOpenShiftVersionOf reads the olm.maxOpenShiftVersion of a CSV as OLM does, from its
// olm.properties annotation.
func maxOpenShiftVersionOf(tb testing.TB, csv *operatorsv1alpha1.ClusterServiceVersion) openshift.Minor {
	tb.Helper()
	props, err := projection.PropertyListFromPropertiesAnnotation(csv.Annotations[projection.PropertiesAnnotationKey])
	if err != nil {
		tb.Fatalf("CSV %s: %v", csv.Name, err)
	}
	for _, p := range props {
		if p.Type == openshift.MaxVersionProperty {
			m, err := openshift.ParseMaxVersion(p.Value)
			if err != nil {
				tb.Fatalf("CSV %s: %v", csv.Name, err)
			}
			return m
		}
	}
	tb.Fatalf("CSV %s declares no %s", csv.Name, openshift.MaxVersionProperty)
	return openshift.Minor{}
}

// waitUpgradeable waits until OLM's ClusterOperator says what OpenShift must say of a cluster at
// minor cluster with CSV name installed: Upgradeable=False naming the CSV when its
// olm.maxOpenShiftVersion holds the cluster at its minor, which `catalog cluster-upgrade` reports
// with openshift.BlocksUpgrade; True otherwise. The max version is read from the installed CSV,
// where OLM put the bundle's properties.
func waitUpgradeable(ctx context.Context, tb testing.TB, s *testbed.Stack, ns, name string, cluster openshift.Minor) {
	tb.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, csv); err != nil {
		tb.Fatal(err)
	}
	max := maxOpenShiftVersionOf(tb, csv)
	blocks := openshift.BlocksUpgrade(cluster, max)
	want := fmt.Sprintf("- maximum supported OCP version for %s/%s is %s", ns, csv.Name, max)
	var got *configv1.ClusterOperatorStatusCondition
	err := testutil.Eventually(ctx, fmt.Sprintf("ClusterOperator %s Upgradeable=%t at %s with %s", testbed.OLMClusterOperator, !blocks, cluster, csv.Name), func(ctx context.Context) error {
		var co configv1.ClusterOperator
		if err := s.Client.Get(ctx, client.ObjectKey{Name: testbed.OLMClusterOperator}, &co); err != nil {
			return err
		}
		got = nil
		for i, c := range co.Status.Conditions {
			if c.Type == configv1.OperatorUpgradeable {
				got = &co.Status.Conditions[i]
			}
		}
		switch {
		case got == nil:
			return fmt.Errorf("no Upgradeable condition")
		case blocks && (got.Status != configv1.ConditionFalse || got.Reason != "IncompatibleOperatorsInstalled" || !containsLine(got.Message, want)):
			return fmt.Errorf("Upgradeable=%s (%s): %s", got.Status, got.Reason, got.Message)
		case !blocks && got.Status != configv1.ConditionTrue:
			return fmt.Errorf("Upgradeable=%s (%s): %s", got.Status, got.Reason, got.Message)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("cluster at %s with %s (olm.maxOpenShiftVersion %s): Upgradeable=%s %s", cluster, csv.Name, max, got.Status, got.Message)
}

func containsLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}

// upgradeClusterThroughMinors is an admin's cluster upgrades, minor by minor, with the EFS
// operator's first release installed from the certified source of the cluster's minor: at each
// step the cluster moves to the next minor (ClusterVersion, and OLM restarted on the new release),
// then the certified source is pointed at the new minor's catalog image. It checks that OLM holds
// the cluster where `catalog cluster-upgrade` says the installed release blocks it, and takes the
// operator exactly where the check of the published catalogs said it would. It returns the
// operator's pod and installed CSV at the last minor (releases holds at least two).
func upgradeClusterThroughMinors(ctx context.Context, t *testing.T, s *testbed.Stack, p *published, ns string, releases []definition.Release) (*corev1.Pod, string) {
	t.Helper()
	report, err := clusterupgrade.Check(ctx, filepath.Join(p.dir, "catalog", string(definition.Certified)))
	if err != nil {
		t.Fatal(err)
	}
	installed := readCSV(t, p.csvFile(efsPackage, releases[0].Version)).Name
	var pod *corev1.Pod
	waitUpgradeable(ctx, t, s, ns, installed, minorOf(t, releases[0]))
	for i, next := range releases[1:] {
		from, to := minorOf(t, releases[i]), minorOf(t, next)
		want := predicted(t, report, from, to, "stable", installed)
		begin := time.Now()
		must(t, s.SetOpenShiftVersion(ctx, clusterRelease(to)))
		// Until its catalog is the new minor's, the cluster still runs the old release.
		waitUpgradeable(ctx, t, s, ns, installed, to)
		must(t, s.SetCatalogSourceImage(ctx, testbed.OLMNamespace, certifiedSource, p.catalogAt(t, definition.Certified, to)))
		if _, err := testbed.WaitForSubscription(ctx, s.Client, ns, efsPackage, "AtLatestKnown "+want, olm.AtLatestKnown(want)); err != nil {
			t.Fatal(err)
		}
		must(t, testbed.WaitForCSV(ctx, s.Client, ns, want, operatorsv1alpha1.CSVPhaseSucceeded))
		installed = readCSV(t, p.csvFile(efsPackage, next.Version)).Name
		if installed != want {
			t.Fatalf("the check takes %s to %s on the cluster's upgrade to %s, not to that minor's release %s", releases[i].Version, want, to, installed)
		}
		shipped := csvDeployment(t, p.csvFile(efsPackage, next.Version))
		pod = operatorPod(ctx, t, s.Client, ns, shipped)
		assertRunsAsShipped(t, pod, shipped)
		t.Logf("cluster %s -> %s, catalog swapped: %s Succeeded, as the check said, in %s", from, to, want, time.Since(begin).Round(100*time.Millisecond))
		waitUpgradeable(ctx, t, s, ns, installed, to)
	}
	return pod, installed
}

// predicted is where `catalog cluster-upgrade` says OLM takes csv, subscribed to channel, when
// the cluster moves from one minor to the next; the flows fail on any other outcome.
func predicted(tb testing.TB, r *clusterupgrade.Report, from, to openshift.Minor, channel, csv string) string {
	tb.Helper()
	for _, step := range r.Steps {
		if step.From != from.Index() || step.To != to.Index() {
			continue
		}
		for _, f := range step.Findings {
			if f.Package == efsPackage && f.Channel == channel && f.Bundle == csv {
				if f.Outcome != clusterupgrade.Moves {
					tb.Fatalf("the check says %s %s on the upgrade %s -> %s: %s", csv, f.Outcome, from, to, f.Message)
				}
				return f.End
			}
		}
	}
	tb.Fatalf("the check followed no %s in channel %s from %s to %s:\n%s", csv, channel, from, to, clusterupgrade.Text(r))
	return ""
}
