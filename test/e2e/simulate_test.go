package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/catalog/predict/olmv0"
	"github.com/csi-olm/csi-olm/catalog/simulate"
	"github.com/csi-olm/csi-olm/catalog/tree"
	"github.com/csi-olm/csi-olm/internal/kube"
	"github.com/csi-olm/csi-olm/internal/olm"
	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
	"github.com/csi-olm/csi-olm/testbed"
)

// The synthetic catalog, and the second catalog that carries the package some of its upgrades
// need: two CatalogSources, as OLM resolves dependencies across every CatalogSource.
const (
	syntheticSource    = "synthetic-operators"
	dependenciesSource = "synthetic-dependencies"
)

// settle is how long OLM must stay at a path's end, AtLatestKnown and installing nothing more,
// before the path counts as ended: its catalog operator resolves again within a second of a
// CSV succeeding.
const settle = 5 * time.Second

// olmStall is how long a cross-check waits with nothing new from OLM (a CSV created, a new phase,
// a CSV deleted, the Subscription's status rewritten) before it calls OLM stuck. OLM's slowest
// legitimate silence is a resolution that failed on one of its own transient states, a replaced
// CSV not yet deleted: it is retried at the catalog operator's next wake-up
// (testbed.CatalogResync), not when the CSV goes. Three wake-ups with nothing new is OLM stuck
// on any machine; one start's install and upgrades take about 20 s each on an idle test bed.
const olmStall = 3 * testbed.CatalogResync

// crossCheck is one start installed with real OLM: a Subscription with Automatic approval
// starting at the CSV, and, for a community start, the switch of its source to the certified
// catalog once OLM has settled.
type crossCheck struct {
	source string
	start  olmv0.Start
	// switched is the community -> certified switch: the start is installed from source with
	// Manual approval, `catalog simulate --from-cluster` is asked, then the Subscription's
	// source becomes certified and approval Automatic.
	switched bool
	// ownNamespace installs into an OwnNamespace OperatorGroup: the synthetic bundles own no
	// APIs and support it, so they run side by side. The project's operators are AllNamespaces
	// only, so one runs at a time per package.
	ownNamespace bool
}

func (c crossCheck) String() string {
	s := fmt.Sprintf("%s/%s/%s@%s", c.source, c.start.Package, c.start.Channel, c.start.CSV)
	if c.switched {
		s += "->" + certifiedSource
	}
	return s
}

// TestSimulateMatchesOLM installs every start of the project's catalogs and of the synthetic
// catalog, and every community version switched to the certified catalog, with real OLM; it
// records every CSV OLM installs until it settles, and checks the record equals the path
// `catalog simulate` predicts for that start, with the dependencies OLM installs from the second
// CatalogSource on the way.
//
// It does not run in parallel: its installs load the two cores enough to slow the real node's
// tests past their deadlines.
func TestSimulateMatchesOLM(t *testing.T) {
	// Each start has a stall window of its own; the test as a whole ends when they do, and go
	// test's -timeout is the last resort.
	ctx := context.Background()
	f := startOLMFixture(ctx, t)
	dirs := map[string]string{
		communitySource: tree.Path(filepath.Join("..", "..", "catalog", "community"), clusterMinor),
		certifiedSource: tree.Path(filepath.Join("..", "..", "catalog", "certified"), clusterMinor),
	}
	for source, write := range map[string]func(string) error{syntheticSource: synthcatalog.Write, dependenciesSource: synthcatalog.WriteDependencies} {
		dir := t.TempDir()
		if err := write(dir); err != nil {
			t.Fatal(err)
		}
		addr, err := f.stack.ServeCatalog(ctx, source, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.stack.CreateCatalogSource(ctx, testbed.OLMNamespace, source, addr); err != nil {
			t.Fatal(err)
		}
		dirs[source] = dir
	}
	var catalogs []predict.Catalog
	for name, dir := range dirs {
		catalogs = append(catalogs, predict.Catalog{Name: name, Dir: dir, FS: os.DirFS(dir)})
	}
	sim, err := olmv0.New(ctx, catalogs...)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()

	// Lanes run side by side; the checks of one lane one after the other.
	lanes := map[string][]crossCheck{}
	for _, source := range []string{communitySource, certifiedSource} {
		for _, st := range sim.Starts(source) {
			lanes[st.Package] = append(lanes[st.Package], crossCheck{source: source, start: st})
			if source == communitySource {
				lanes[st.Package] = append(lanes[st.Package], crossCheck{source: source, start: st, switched: true})
			}
		}
	}
	for _, st := range sim.Starts(syntheticSource) {
		c := crossCheck{source: syntheticSource, start: st, ownNamespace: true}
		lanes[c.String()] = []crossCheck{c}
	}
	watcher, err := client.NewWithWatch(f.stack.Config, client.Options{Scheme: f.stack.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, 4)
		n     int
		mu    sync.Mutex
		ran   []string
	)
	for _, key := range slices.Sorted(maps.Keys(lanes)) {
		wg.Add(1)
		go func(checks []crossCheck) {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			for _, c := range checks {
				mu.Lock()
				n++
				ns := fmt.Sprintf("simulate-%d", n)
				mu.Unlock()
				began := time.Now()
				// One start stuck must not hide the others: each gets its own stall window.
				cctx, stop := progress.WithStall(ctx, olmStall)
				path, transients, err := c.run(cctx, f, watcher, sim, ns)
				stop()
				if err != nil {
					t.Errorf("%s (namespace %s): %v", c, ns, err)
					continue
				}
				waited := ""
				if transients > 0 {
					waited = fmt.Sprintf(", %d transient resolution failure(s) of OLM waited through", transients)
				}
				mu.Lock()
				ran = append(ran, fmt.Sprintf("%s: %s (%.1f s%s)", c, strings.Join(path, " -> "), time.Since(began).Seconds(), waited))
				mu.Unlock()
			}
		}(lanes[key])
	}
	wg.Wait()
	slices.Sort(ran)
	t.Logf("OLM took the predicted path from %d starts:\n  %s", len(ran), strings.Join(ran, "\n  "))
	if len(ran) == 0 {
		t.Fatal("no start was checked")
	}
}

// run installs the start in its own namespace, records the CSVs OLM creates there, and compares
// them with the prediction; it removes what it installed before returning. It returns the path,
// and how many of OLM's transient resolution failures it waited through on the way.
func (c crossCheck) run(ctx context.Context, f *olmFixture, watcher client.WithWatch, sim *olmv0.Simulator, ns string) (want []string, transients int, err error) {
	kc := f.stack.Client
	if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, 0, err
	}
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "og", Namespace: ns}}
	if c.ownNamespace {
		og.Spec.TargetNamespaces = []string{ns}
	}
	if err := kc.Create(ctx, og); err != nil {
		return nil, 0, err
	}
	defer func() {
		// The check may have stalled: the clean-up gets a stall window of its own.
		cctx, stop := progress.WithStall(context.WithoutCancel(ctx), olmStall)
		defer stop()
		if cerr := c.cleanup(cctx, kc, ns); err == nil {
			err = cerr
		}
	}()

	want, deps, err := c.predict(ctx, sim)
	if err != nil {
		return nil, 0, err
	}
	var csvs operatorsv1alpha1.ClusterServiceVersionList
	w, err := watcher.Watch(ctx, &csvs, client.InNamespace(ns))
	if err != nil {
		return nil, 0, err
	}
	defer w.Stop()
	// The Subscription too is followed by a watch, not read at every poll: the lanes' reads were
	// a third of the API server's requests, and more the slower the machine.
	var subs operatorsv1alpha1.SubscriptionList
	sw, err := watcher.Watch(ctx, &subs, client.InNamespace(ns))
	if err != nil {
		return nil, 0, err
	}
	defer sw.Stop()
	rec := &recorder{changed: make(chan struct{}, 1)}
	go rec.follow(ctx, w)
	go rec.followSubscription(sw, c.start.Package)

	approval := operatorsv1alpha1.ApprovalAutomatic
	if c.switched {
		approval = operatorsv1alpha1.ApprovalManual
	}
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: c.start.Package, Namespace: ns},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			Package: c.start.Package, Channel: c.start.Channel, StartingCSV: c.start.CSV,
			CatalogSource: c.source, CatalogSourceNamespace: testbed.OLMNamespace, InstallPlanApproval: approval,
		},
	}
	if err := kc.Create(ctx, sub); err != nil {
		return nil, 0, err
	}
	if c.switched {
		if err := installStart(ctx, kc, ns, c.start); err != nil {
			return nil, 0, fmt.Errorf("installing the start before the switch: %w (recorded %v)", err, rec.names())
		}
		// What an admin asks before switching: simulate reads the Subscription and the CSV OLM
		// installed from the cluster.
		if err := c.fromClusterAgrees(ctx, f.stack, ns, want); err != nil {
			return nil, 0, err
		}
		stale, err := switchSource(ctx, kc, ns, c.start.Package)
		if err != nil {
			return nil, 0, err
		}
		err = waitForPath(ctx, ns, c.start.Package, want, deps, rec, func() error { return approveNew(ctx, kc, ns, stale) })
		return want, rec.transientCount(), err
	}
	err = waitForPath(ctx, ns, c.start.Package, want, deps, rec, nil)
	return want, rec.transientCount(), err
}

// predict is the path `catalog simulate` gives: the start, then each step's bundle, and the
// dependencies OLM installs on the way. Every start of these catalogs resolves.
func (c crossCheck) predict(ctx context.Context, sim *olmv0.Simulator) (path, deps []string, err error) {
	target, start := c.source, c.start
	if c.switched {
		target, start.InstalledFrom = certifiedSource, c.source
	}
	p, err := sim.Simulate(ctx, target, start)
	if err != nil {
		return nil, nil, err
	}
	if p.Result == predict.Unresolvable {
		return nil, nil, fmt.Errorf("simulate cannot resolve the start: %s", p.ResolutionFailed.Message)
	}
	path = []string{p.Start.Name}
	for _, s := range p.Steps {
		path = append(path, s.To)
	}
	for _, d := range p.Dependencies {
		deps = append(deps, d.CSV)
	}
	return path, deps, nil
}

// installStart approves the install of the start alone: the Subscription's approval is Manual.
func installStart(ctx context.Context, kc client.Client, ns string, start olmv0.Start) error {
	sub, err := testbed.WaitForSubscription(ctx, kc, ns, start.Package, "an InstallPlan", func(s *operatorsv1alpha1.Subscription) bool {
		return s.Status.InstallPlanRef != nil
	})
	if err != nil {
		return err
	}
	var plan operatorsv1alpha1.InstallPlan
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: sub.Status.InstallPlanRef.Name}, &plan); err != nil {
		return err
	}
	if !slices.Equal(plan.Spec.ClusterServiceVersionNames, []string{start.CSV}) {
		return fmt.Errorf("the first InstallPlan installs %v, not the start %s", plan.Spec.ClusterServiceVersionNames, start.CSV)
	}
	patch := client.MergeFrom(plan.DeepCopy())
	plan.Spec.Approved = true
	if err := kc.Patch(ctx, &plan, patch); err != nil {
		return err
	}
	if err := testbed.WaitForCSV(ctx, kc, ns, start.CSV, operatorsv1alpha1.CSVPhaseSucceeded); err != nil {
		return err
	}
	// OLM records the install on the Subscription a little after the CSV succeeds.
	_, err = testbed.WaitForSubscription(ctx, kc, ns, start.Package, "installedCSV "+start.CSV, func(s *operatorsv1alpha1.Subscription) bool {
		return s.Status.InstalledCSV == start.CSV
	})
	return err
}

// switchSource points the Subscription at the certified catalog with Automatic approval, as an
// admin does (docs/architecture.md#upgrades), and deletes the community upgrade OLM planned
// meanwhile, which waits for an approval that will not come. It returns the InstallPlans that
// existed before the switch.
func switchSource(ctx context.Context, kc client.Client, ns, pkg string) (map[string]bool, error) {
	var plans operatorsv1alpha1.InstallPlanList
	if err := kc.List(ctx, &plans, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	stale := map[string]bool{}
	for _, p := range plans.Items {
		stale[p.Name] = true
	}
	var sub operatorsv1alpha1.Subscription
	if err := kc.Get(ctx, client.ObjectKey{Namespace: ns, Name: pkg}, &sub); err != nil {
		return nil, err
	}
	patch := client.MergeFrom(sub.DeepCopy())
	sub.Spec.CatalogSource = certifiedSource
	sub.Spec.InstallPlanApproval = operatorsv1alpha1.ApprovalAutomatic
	if err := kc.Patch(ctx, &sub, patch); err != nil {
		return nil, err
	}
	for i := range plans.Items {
		if p := &plans.Items[i]; !p.Spec.Approved {
			if err := kc.Delete(ctx, p); err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
		}
	}
	return stale, nil
}

// approveNew approves the InstallPlans made since the switch. OLM sometimes makes the first of
// them from the Subscription as it was a moment before the edit, with Manual approval; what the
// plan installs is still OLM's choice, which the recorder checks.
func approveNew(ctx context.Context, kc client.Client, ns string, stale map[string]bool) error {
	var plans operatorsv1alpha1.InstallPlanList
	if err := kc.List(ctx, &plans, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range plans.Items {
		p := &plans.Items[i]
		if stale[p.Name] || p.Spec.Approved {
			continue
		}
		patch := client.MergeFrom(p.DeepCopy())
		p.Spec.Approved = true
		if err := kc.Patch(ctx, p, patch); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// fromClusterAgrees runs `catalog simulate --from-cluster` on the tree of certified catalogs,
// which reads the catalog of the minor the cluster's ClusterVersion names, and checks that its
// path for this namespace's Subscription is want.
func (c crossCheck) fromClusterAgrees(ctx context.Context, s *testbed.Stack, ns string, want []string) error {
	var out bytes.Buffer
	a := &simulate.Simulate{
		Catalog: filepath.Join("..", "..", "catalog", "certified"), FromCluster: true,
		Cluster: kube.ClusterOptions{Config: s.Config}, Output: "json", Out: &out,
	}
	if err := a.Run(ctx); err != nil {
		return fmt.Errorf("simulate --from-cluster: %w", err)
	}
	var got struct{ Paths []olmv0.Path }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		return err
	}
	for _, p := range got.Paths {
		if p.Subscription != ns+"/"+c.start.Package {
			continue
		}
		route := []string{p.Start.Name}
		for _, st := range p.Steps {
			route = append(route, st.To)
		}
		if !slices.Equal(route, want) || p.Start.Catalog != "cluster" {
			return fmt.Errorf("simulate --from-cluster predicts %v from the %s, simulate from the catalogs %v", route, p.Start.Catalog, want)
		}
		return nil
	}
	return fmt.Errorf("simulate --from-cluster has no path for Subscription %s/%s:\n%s", ns, c.start.Package, out.String())
}

// waitForPath waits until OLM has installed want, in order, and the dependencies deps, and
// settled on want's last CSV; it fails as soon as OLM installs a CSV off the predicted path or a
// dependency not predicted, and when OLM does nothing new for ctx's stall window. each, when
// set, runs when the Subscription changes (OLM records a new InstallPlan on it) and every few
// seconds besides.
//
// A resolution that failed on OLM's own transient state is no verdict: OLM resolved the next step
// while the CSV the last step replaced was still there, which makes that CSV one "not referenced
// by a subscription", and retries at its next wake-up. The wait goes on, and the state is logged.
func waitForPath(ctx context.Context, ns, pkg string, want, deps []string, rec *recorder, each func() error) error {
	end := want[len(want)-1]
	var settledSince, eachRan time.Time
	seenRevision, seenTransient := "", ""
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		got := rec.names()
		sub := rec.subscription()
		// A dependency goes in with the step that needs it, in one InstallPlan: its order among
		// that plan's CSVs is OLM's to pick.
		own := slices.DeleteFunc(slices.Clone(got), func(csv string) bool { return slices.Contains(deps, csv) })
		if len(own) > len(want) || !slices.Equal(own, want[:len(own)]) {
			return fmt.Errorf("OLM installed %v, simulate predicted %v with dependencies %v", got, want, deps)
		}
		changed := sub != nil && sub.ResourceVersion != seenRevision
		if changed {
			seenRevision = sub.ResourceVersion
			progress.Advance(ctx, "Subscription "+ns+"/"+pkg+" at revision "+seenRevision)
		}
		if each != nil && (changed || time.Since(eachRan) >= settle) {
			if err := each(); err != nil {
				return err
			}
			eachRan = time.Now()
		}
		if csv := replacedNotYetGone(sub, own); csv != "" && csv != seenTransient {
			seenTransient = csv
			progress.Advance(ctx, "OLM's transient state: its resolution met "+csv+", which the last step replaced, not deleted yet; OLM retries at its next wake-up")
			rec.noteTransient()
		}
		atEnd := sub != nil && len(own) == len(want) && olm.AtLatestKnown(end)(sub) && rec.succeeded(end) &&
			!slices.ContainsFunc(deps, func(csv string) bool { return !rec.succeeded(csv) })
		switch {
		case !atEnd:
			settledSince = time.Time{}
		case settledSince.IsZero():
			settledSince = time.Now()
		case time.Since(settledSince) >= settle:
			return nil
		}
		select {
		case <-ctx.Done():
			var getErr error
			if sub == nil {
				getErr = fmt.Errorf("no event of Subscription %s/%s yet", ns, pkg)
				sub = &operatorsv1alpha1.Subscription{}
			}
			return fmt.Errorf("OLM installed %v, simulate predicted %v with dependencies %v: %w\n%s", got, want, deps, progress.Cause(ctx), olm.DescribeSubscription(sub, getErr))
		case <-rec.changed:
		case <-tick.C:
		}
	}
}

// replacedNotYetGone names the CSV a failed resolution of sub found "not referenced by a
// subscription" when it is one the path has already moved past (an earlier CSV of own): OLM's
// transient state between a CSV succeeding and the one it replaced being deleted. It is "" for
// any other state.
func replacedNotYetGone(sub *operatorsv1alpha1.Subscription, own []string) string {
	if sub == nil {
		return ""
	}
	cond := sub.Status.GetCondition(operatorsv1alpha1.SubscriptionResolutionFailed)
	if cond.Status != corev1.ConditionTrue || len(own) < 2 {
		return ""
	}
	for _, csv := range own[:len(own)-1] {
		if strings.Contains(cond.Message, "clusterserviceversion "+csv+" exists and is not referenced by a subscription") {
			return csv
		}
	}
	return ""
}

// recorder keeps the CSVs OLM creates in a namespace, in order, and their last phase. Copies
// OLM makes of other namespaces' global operators are not installs and are left out.
type recorder struct {
	mu         sync.Mutex
	order      []string
	phases     map[string]operatorsv1alpha1.ClusterServiceVersionPhase
	transients int
	sub        *operatorsv1alpha1.Subscription
	// changed wakes waitForPath at every event.
	changed chan struct{}
}

// follow records w's events, each a step of ctx's progress: a CSV created, a new phase, a CSV
// deleted.
func (r *recorder) follow(ctx context.Context, w watch.Interface) {
	for ev := range w.ResultChan() {
		csv, ok := ev.Object.(*operatorsv1alpha1.ClusterServiceVersion)
		if !ok || csv.IsCopied() {
			continue
		}
		r.mu.Lock()
		if r.phases == nil {
			r.phases = map[string]operatorsv1alpha1.ClusterServiceVersionPhase{}
		}
		if _, seen := r.phases[csv.Name]; !seen && ev.Type != watch.Deleted {
			r.order = append(r.order, csv.Name)
		}
		r.phases[csv.Name] = csv.Status.Phase
		r.mu.Unlock()
		r.wake()
		progress.Advance(ctx, fmt.Sprintf("CSV %s %s, phase %q", csv.Name, strings.ToLower(string(ev.Type)), csv.Status.Phase))
	}
}

// followSubscription keeps the last state w gives of the Subscription name.
func (r *recorder) followSubscription(w watch.Interface, name string) {
	for ev := range w.ResultChan() {
		sub, ok := ev.Object.(*operatorsv1alpha1.Subscription)
		if !ok || sub.Name != name || ev.Type == watch.Deleted {
			continue
		}
		r.mu.Lock()
		r.sub = sub
		r.mu.Unlock()
		r.wake()
	}
}

func (r *recorder) wake() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// subscription is the Subscription's last state, nil before its first event.
func (r *recorder) subscription() *operatorsv1alpha1.Subscription {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub == nil {
		return nil
	}
	return r.sub.DeepCopy()
}

// noteTransient counts a transient state of OLM the check waited through.
func (r *recorder) noteTransient() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.transients++
}

func (r *recorder) transientCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.transients
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

func (r *recorder) succeeded(csv string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.phases[csv] == operatorsv1alpha1.CSVPhaseSucceeded
}

// cleanup removes the Subscription, its InstallPlans, its CSVs and the OperatorGroup, and waits
// until they are gone, so that the next AllNamespaces install of the package meets no other
// OperatorGroup providing its APIs; the namespace goes last, without waiting. An InstallPlan OLM
// was still executing when the Subscription went can create its CSV after the first delete (a
// fresh machine's run timed out on such a CSV), so every poll deletes what is still there.
func (c crossCheck) cleanup(ctx context.Context, kc client.Client, ns string) error {
	for _, obj := range []client.Object{&operatorsv1alpha1.Subscription{}, &operatorsv1alpha1.InstallPlan{}} {
		if err := kc.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
			return err
		}
	}
	var left []string
	last := ""
	err := waitFor(ctx, func() bool {
		left = left[:0]
		var csvs operatorsv1alpha1.ClusterServiceVersionList
		var ogs operatorsv1.OperatorGroupList
		if kc.List(ctx, &csvs, client.InNamespace(ns)) != nil || kc.List(ctx, &ogs, client.InNamespace(ns)) != nil {
			return false
		}
		for i := range csvs.Items {
			if csv := &csvs.Items[i]; !csv.IsCopied() {
				left = append(left, "CSV "+csv.Name)
				_ = kc.Delete(ctx, csv)
			}
		}
		for i := range ogs.Items {
			left = append(left, "OperatorGroup "+ogs.Items[i].Name)
			_ = kc.Delete(ctx, &ogs.Items[i])
		}
		if now := fmt.Sprint(left); now != last {
			last = now
			progress.Advance(ctx, "left in "+ns+": "+now)
		}
		return len(left) == 0
	})
	if err != nil {
		return fmt.Errorf("cleaning up %s: %w (still there: %v)", ns, progress.Cause(ctx), left)
	}
	return kc.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
}
