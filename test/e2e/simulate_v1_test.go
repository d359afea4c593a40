package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/bundle/definition"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv1"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/openshift"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/testbed"
)

// v1Check is one start of the OLM v1 cross-check: a ClusterExtension installed with from (nil:
// nothing installed), then changed to to; operator-controller settles on a bundle, or reports
// an error, which simulate.V1Resolver's walk must predict.
type v1Check struct {
	name     string
	from, to *v1Spec
}

// v1Spec is the part of a ClusterExtension's spec.source.catalog the cross-check varies.
type v1Spec struct {
	catalogs []definition.Catalog // the selector: these catalogs by name; nil selects every one
	version  string
	channels []string
	policy   olmv1.UpgradeConstraintPolicy
}

func (s *v1Spec) catalogFields() map[string]any {
	fields := map[string]any{"version": nil, "channels": nil, "selector": nil, "upgradeConstraintPolicy": nil}
	if s.version != "" {
		fields["version"] = s.version
	}
	if len(s.channels) > 0 {
		fields["channels"] = s.channels
	}
	if len(s.catalogs) > 0 {
		var names []any
		for _, c := range s.catalogs {
			names = append(names, string(c))
		}
		fields["selector"] = map[string]any{"matchExpressions": []any{map[string]any{
			"key": testbed.CatalogNameLabel, "operator": "In", "values": names,
		}}}
	}
	if s.policy != "" {
		fields["upgradeConstraintPolicy"] = string(s.policy)
	}
	return fields
}

// TestSimulateV1MatchesOperatorController runs real operator-controller (v1.5.1, the test bed's)
// from several starts on the published community and certified catalogs of the cluster's minor
// and the certified catalog of the minor before (whose installs a cluster upgrade moves to the
// cluster minor's), served as ClusterCatalogs of equal priority, and checks that `catalog
// simulate --olm v1`'s rule
// predicts where each settles: the bundle installed, or operator-controller's error word for
// word. The CRD upgrade-safety preflight is off throughout: it runs after the resolution this
// compares (TestOLMv1CommunityMoveOnRealNode tests it).
func TestSimulateV1MatchesOperatorController(t *testing.T) {
	stopRealNode()
	s := startRealNode(t)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	p := publish(t, s)
	all := []definition.Catalog{definition.Community, definition.Certified}
	startOLMv1(ctx, t, s, p, olmv1Timings{}, clusterMinor, all...)
	// Beside them, the certified catalog of the minor before, where a cluster upgraded from it
	// installed: the cluster upgrade swaps it for the cluster minor's.
	before := openshift.Minor{Major: clusterMinor.Major, Minor: clusterMinor.Minor - 1}
	previous := definition.Catalog("certified-" + before.Index())
	if err := s.CreateClusterCatalog(ctx, string(previous), p.catalogAt(t, definition.Certified, before), 0); err != nil {
		t.Fatal(err)
	}
	configs := map[definition.Catalog]*declcfg.DeclarativeConfig{}
	dirs := map[definition.Catalog]string{
		definition.Community: tree.Path(filepath.Join(p.dir, "catalog", string(definition.Community)), clusterMinor),
		definition.Certified: tree.Path(filepath.Join(p.dir, "catalog", string(definition.Certified)), clusterMinor),
		previous:             tree.Path(filepath.Join(p.dir, "catalog", string(definition.Certified)), before),
	}
	for name, dir := range dirs {
		cfg, err := declcfg.LoadFS(ctx, os.DirFS(dir))
		if err != nil {
			t.Fatal(err)
		}
		configs[name] = cfg
	}
	certified, community, older := []definition.Catalog{definition.Certified}, []definition.Catalog{definition.Community}, []definition.Catalog{previous}
	head, previousRelease := clusterMinor.String()+".0", before.String()+".0"
	checks := []v1Check{
		{"new, any channel", nil, &v1Spec{catalogs: certified}},
		{"new, the minor's channel", nil, &v1Spec{catalogs: certified, channels: []string{clusterMinor.String()}}},
		{"new, no version in range", nil, &v1Spec{catalogs: certified, version: "<" + head}},
		{"new, every catalog", nil, &v1Spec{}},
		{"the cluster upgrade", &v1Spec{catalogs: older, version: previousRelease}, &v1Spec{catalogs: certified}},
		{"the cluster upgrade, the old minor's channel kept", &v1Spec{catalogs: older, version: previousRelease, channels: []string{before.String()}},
			&v1Spec{catalogs: certified, channels: []string{before.String()}}},
		{"down to the minor before", &v1Spec{catalogs: certified, version: head}, &v1Spec{catalogs: older, version: previousRelease}},
		{"down to the minor before, self-certified", &v1Spec{catalogs: certified, version: head},
			&v1Spec{catalogs: older, version: previousRelease, policy: olmv1.SelfCertified}},
		{"community 0.0.6 unpinned", &v1Spec{catalogs: community, version: "0.0.6"}, &v1Spec{catalogs: community}},
		{"community 0.0.6 to certified", &v1Spec{catalogs: community, version: "0.0.6"}, &v1Spec{catalogs: certified}},
		{"community 0.0.7 to both catalogs", &v1Spec{catalogs: community, version: "0.0.7"}, &v1Spec{catalogs: []definition.Catalog{definition.Community, definition.Certified}}},
	}
	ns := testbed.OperatorsNamespace
	createOLMv1Installer(ctx, t, s, ns)
	noPreflight := crdUpgradeSafety("None")
	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if i > 0 {
				deleteOLMv1Extension(ctx, t, s)
			}
			var installed *olmv1.Installed
			if c.from != nil {
				createOLMv1Extension(ctx, t, s, ns, c.from.catalogFields(), noPreflight)
				u := waitSettled(ctx, t, s)
				name, _, _ := unstructured.NestedString(u.Object, "status", "install", "bundle", "name")
				version, _, _ := unstructured.NestedString(u.Object, "status", "install", "bundle", "version")
				installed = &olmv1.Installed{Name: name, Version: version}
				patchOLMv1Catalog(ctx, t, s, c.to.catalogFields())
			} else {
				createOLMv1Extension(ctx, t, s, ns, c.to.catalogFields(), noPreflight)
			}
			want := predictV1(ctx, t, configs, c.to, installed)
			waitSettledOn(ctx, t, s, want)
			t.Logf("from %v: %s", installed, want)
		})
	}
}

// v1Outcome is where operator-controller settles: the bundle installed and its error, if any.
type v1Outcome struct{ installed, progressing string }

func (o v1Outcome) String() string {
	if o.progressing != "" {
		return fmt.Sprintf("%s installed, Progressing %q", o.installed, o.progressing)
	}
	return o.installed + " installed"
}

// predictV1 is the simulator's outcome for spec, from installed, on the catalogs spec selects.
func predictV1(ctx context.Context, tb testing.TB, configs map[definition.Catalog]*declcfg.DeclarativeConfig, spec *v1Spec, installed *olmv1.Installed) v1Outcome {
	tb.Helper()
	selected := spec.catalogs
	if len(selected) == 0 {
		selected = slices.Sorted(maps.Keys(configs)) // no selector: every ClusterCatalog
	}
	var catalogs []olmv1.Catalog
	for _, name := range selected {
		catalogs = append(catalogs, olmv1.Catalog{Name: string(name), Config: configs[name]})
	}
	r, err := olmv1.NewResolver(catalogs...)
	if err != nil {
		tb.Fatal(err)
	}
	path, err := r.Walk(ctx, olmv1.Request{Package: efsPackage, Channels: spec.channels, Version: spec.version, Policy: spec.policy, Installed: installed}, "")
	if err != nil {
		tb.Fatal(err)
	}
	return v1Outcome{installed: path.End, progressing: path.Progressing}
}

// observedOutcome reads where the ClusterExtension is: its installed bundle, and the message of
// its Progressing condition when that is an error for the current generation.
func observedOutcome(u *unstructured.Unstructured) (v1Outcome, bool) {
	name, _, _ := unstructured.NestedString(u.Object, "status", "install", "bundle", "name")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Progressing" {
			continue
		}
		observed, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if observed != u.GetGeneration() {
			return v1Outcome{}, false
		}
		o := v1Outcome{installed: name}
		if m["reason"] == "Retrying" {
			o.progressing, _ = m["message"].(string)
		}
		return o, m["reason"] == "Retrying" || m["reason"] == "Succeeded"
	}
	return v1Outcome{}, false
}

// waitSettled waits until operator-controller has reconciled the current generation of the
// ClusterExtension and installed a bundle, and returns it.
func waitSettled(ctx context.Context, tb testing.TB, s *testbed.Stack) *unstructured.Unstructured {
	tb.Helper()
	ctx, cancel := progress.WithStall(ctx, flowStall)
	defer cancel()
	u, err := testbed.WaitForOLMv1(ctx, s.Client, testbed.ClusterExtensionGVK, efsPackage, "a bundle installed", func(u *unstructured.Unstructured) bool {
		o, ok := observedOutcome(u)
		return ok && o.installed != "" && o.progressing == "" && testbed.ConditionStatus(u, "Installed") == "True"
	})
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// waitSettledOn waits until operator-controller reaches want and stays there for a few
// reconciles; on timeout it fails with where operator-controller is instead. A prediction of
// no move holds only once operator-controller has reconciled the new spec.
func waitSettledOn(ctx context.Context, tb testing.TB, s *testbed.Stack, want v1Outcome) {
	tb.Helper()
	var last v1Outcome
	var seen progress.Reason
	since := time.Time{}
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		u := efsExtension()
		err := s.Client.Get(ctx, client.ObjectKeyFromObject(u), u)
		seen.Revision(ctx, "ClusterExtension", u.GetResourceVersion(), err)
		if err != nil {
			return false, nil
		}
		o, ok := observedOutcome(u)
		if !ok {
			since = time.Time{}
			return false, nil
		}
		last = o
		if o != want {
			since = time.Time{}
			return false, nil
		}
		if since.IsZero() {
			since = time.Now()
		}
		// A multi-hop walk passes through its steps; the end must hold.
		return time.Since(since) > 5*time.Second, nil
	})
	if err != nil {
		tb.Fatalf("operator-controller: %s; the simulator predicts: %s (%v)", last, want, progress.Cause(ctx))
	}
}

// deleteOLMv1Extension deletes the EFS operator's ClusterExtension and waits until it is gone,
// with what it installed: the next start installs into a cluster without it. Until the garbage
// collector has deleted the old extension's CRDs, operator-controller refuses to install the
// same bundle for a new ClusterExtension of the same name (docs/olm-v1.md#uninstalling-with-olm-v1).
func deleteOLMv1Extension(ctx context.Context, tb testing.TB, s *testbed.Stack) {
	tb.Helper()
	ce := efsExtension()
	if err := s.Client.Get(ctx, client.ObjectKeyFromObject(ce), ce); err != nil {
		if apierrors.IsNotFound(err) {
			return
		}
		tb.Fatal(err)
	}
	uid := ce.GetUID()
	if err := s.Client.Delete(ctx, ce, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		tb.Fatal(err)
	}
	var seen progress.Reason
	if err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := s.Client.Get(ctx, client.ObjectKeyFromObject(ce), ce)
		seen.Revision(ctx, "the ClusterExtension's deletion", ce.GetResourceVersion(), err)
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		tb.Fatalf("the ClusterExtension is not gone: %v", progress.Cause(ctx))
	}
	waitOwnedGone(ctx, tb, s, "ClusterExtension "+ce.GetName(), uid)
}
