package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/csi-olm/csi-olm/internal/progress"
	"github.com/csi-olm/csi-olm/migrate/cso"
	"github.com/csi-olm/csi-olm/migrate/subscription"
	"github.com/csi-olm/csi-olm/testbed"
)

// migrateCorpus is where the migrate verbs' bad inputs are kept, one directory a case.
var migrateCorpus = filepath.Join("..", "badinput", "migrate")

// migrateCase is a case.yaml of test/badinput/migrate; its README says how one is written.
type migrateCase struct {
	// About says what is wrong, for the reader of a failure.
	About string `json:"about"`
	// Verb is subscription or cso.
	Verb    string       `json:"verb"`
	Options verbOptions  `json:"options,omitempty"`
	Objects []objectYAML `json:"objects,omitempty"`
	// Before is a change made before the run (and put back after it), for a case that needs a
	// cluster object otherwise than the shared test bed has it.
	Before  *objectPatch  `json:"before,omitempty"`
	During  *editDuring   `json:"during,omitempty"`
	Journal *journalState `json:"journal,omitempty"`
	// LeavesPlan marks the case after which OLM holds a planned upgrade to the target, awaiting
	// Manual approval. Nothing puts the test bed back from that: OLM does not resolve a Subscription
	// pending an InstallPlan again, whatever its spec says since, and a resolution in flight writes
	// back the status it began from. So the case runs after all the others, and at most one case
	// may be such a case (TestMigrateSubscriptionOLMFaults gives each of OLM's failures a test bed
	// of its own for the same reason).
	LeavesPlan bool `json:"leavesPlan,omitempty"`
	// Want lists what the verb's output and error must say, every line.
	Want []string `json:"want"`
}

// verbOptions are the verb's flags. Unset, they are the command line's defaults, but for the
// target catalog's namespace, olm on the test bed.
type verbOptions struct {
	Source              string `json:"source,omitempty"`
	SourceNamespace     string `json:"sourceNamespace,omitempty"`
	Channel             string `json:"channel,omitempty"`
	Driver              string `json:"driver,omitempty"`
	AcceptNamespaceMove bool   `json:"acceptNamespaceMove,omitempty"`
	DryRun              *bool  `json:"dryRun,omitempty"`
	Output              string `json:"output,omitempty"`
	// User is who runs the verb: empty for the cluster's admin, or viewer, who may only read
	// Subscriptions, CatalogSources, CSVs and ConfigMaps.
	User string `json:"user,omitempty"`
}

// objectYAML is a whole Kubernetes object, created before the run and deleted after it. In a
// ConfigMap, the data value $CHECKSUM stands for the checksum csi-olm writes in a journal.
type objectYAML map[string]any

// editDuring is a change someone else makes while the verb runs: a JSON merge patch applied the
// moment the verb's output first contains When, as the field manager kubectl-edit. The object is
// put back after the case.
type editDuring struct {
	When  string      `json:"when"`
	Patch objectPatch `json:"patch"`
}

// objectPatch is a JSON merge patch of one object, applied as the field manager kubectl-edit.
type objectPatch struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Namespace  string         `json:"namespace,omitempty"`
	Name       string         `json:"name"`
	Merge      map[string]any `json:"merge"`
}

// journalState is what the verb's journal must record when the verb stopped after changing the
// cluster: its steps done and the step that failed. It is the one object that may change.
type journalState struct {
	Completed string `json:"completed"`
	Failed    string `json:"failed"`
}

// TestMigrateCorpus feeds each case of test/badinput/migrate to its verb on a cluster running
// the community EFS operator and the OLM-era EBS operator, and checks that the verb refuses it
// with every message the case lists, without a panic, and that nothing on the cluster changed.
func TestMigrateCorpus(t *testing.T) {
	t.Parallel()
	cases := readMigrateCases(t)
	ctx, cancel := progress.WithStall(context.Background(), flowStall)
	defer cancel()
	f := startOLMFixture(ctx, t)
	s := f.stack
	f.installCommunity(ctx, t)
	installOLMEraDrivers(ctx, t, f, olmEraDrivers()[0])
	serveCatalogVariant(ctx, t, s, "edgeless", edgeless)
	serveCatalogVariant(ctx, t, s, "requires-missing-api", requiresMissingAPI)
	serveCatalogVariant(ctx, t, s, "crd-drops-v1alpha1", headCRDDropsStoredVersion)
	users := map[string]*rest.Config{"": s.Config, "viewer": grantOnly(ctx, t, s, "viewer")}
	// notReset names the case after which the shared test bed could not be put back: every case
	// after it would start from a state it was not written for, so each fails at once instead.
	var notReset string
	for _, mc := range cases {
		t.Run(mc.name, func(t *testing.T) {
			if notReset != "" {
				t.Fatalf("not run: %s", notReset)
			}
			if !mc.tc.LeavesPlan {
				t.Cleanup(func() {
					if err := resetCase(ctx, s.Client); err != nil {
						notReset = fmt.Sprintf("case %s left the test bed changed: %v", mc.name, err)
						t.Error(notReset)
					}
				})
			}
			runMigrateCase(ctx, t, s, users, mc.dir, &mc.tc)
		})
	}
	t.Logf("%d cases", len(cases))
}

// corpusCase is one directory of test/badinput/migrate, read.
type corpusCase struct {
	name, dir string
	tc        migrateCase
}

// readMigrateCases reads every case of the corpus, in directory order but for the one that
// leaves OLM with a planned upgrade, which comes last; it reports every case it cannot read.
func readMigrateCases(t *testing.T) []corpusCase {
	entries, err := os.ReadDir(migrateCorpus)
	must(t, err)
	var cases, last []corpusCase
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		mc := corpusCase{name: e.Name(), dir: filepath.Join(migrateCorpus, e.Name())}
		raw, err := os.ReadFile(filepath.Join(mc.dir, "case.yaml"))
		if err == nil {
			err = yaml.UnmarshalStrict(raw, &mc.tc)
		}
		switch {
		case err != nil:
			t.Errorf("%s/case.yaml: %v", mc.dir, err)
		case mc.tc.About == "" || len(mc.tc.Want) == 0 || (mc.tc.Verb != "subscription" && mc.tc.Verb != "cso"):
			t.Errorf("%s/case.yaml lacks about or want, or names an unknown verb", mc.dir)
		case mc.tc.LeavesPlan:
			last = append(last, mc)
		default:
			cases = append(cases, mc)
		}
	}
	if len(last) > 1 {
		t.Errorf("%d cases leave OLM with a planned upgrade, and only the last case of a test bed may", len(last))
	}
	if t.Failed() {
		t.FailNow()
	}
	return append(cases, last...)
}

func runMigrateCase(ctx context.Context, t *testing.T, s *testbed.Stack, users map[string]*rest.Config, dir string, tc *migrateCase) {
	config, known := users[tc.Options.User]
	if !known {
		t.Fatalf("%s/case.yaml names an unknown user %q", dir, tc.Options.User)
	}
	c := s.Client
	for _, o := range tc.Objects {
		createObject(ctx, t, c, o)
	}
	// Cleanups run last first: resetCase (registered by the caller) runs once the edited
	// objects are back.
	if tc.Before != nil {
		restoreSpecAfter(ctx, t, c, tc.Before)
		editObject(ctx, t, c, tc.Before)
		if tc.Before.Kind == "Subscription" {
			must(t, olmTookIn(ctx, c, tc.Before))
		}
	}
	before := snapshot(ctx, t, c)
	out := &onProgress{}
	if tc.During != nil {
		restoreSpecAfter(ctx, t, c, &tc.During.Patch)
		out.when = tc.During.When
		out.act = func() {
			// What the verb must leave alone is the cluster as the edit left it: the edit's own
			// change is laid over the state before the run.
			edited := snapshot(ctx, t, c)
			editObject(ctx, t, c, &tc.During.Patch)
			for k, v := range snapshot(ctx, t, c) {
				if edited[k] != v {
					before[k] = v
				}
			}
		}
	}

	journal := "csi-olm-migrate-subscription-" + efsPackage
	if tc.Verb == "cso" {
		journal = "csi-olm-migrate-cso-" + tc.Options.Driver
	}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s: the verb panicked: %v\n%s", tc.About, r, debug.Stack())
			}
		}()
		return tc.run(ctx, s, config, out)
	}()
	if err == nil {
		t.Fatalf("%s: accepted\n%s", tc.About, out.String())
	}
	said := out.String() + "\n" + err.Error()
	t.Logf("%s:\n%s", tc.About, said) // what to write a new case's want from: go test -v -run 'TestMigrateCorpus/<case>$'
	for _, w := range tc.Want {
		if !strings.Contains(said, w) {
			t.Errorf("%s: the verb does not say %q", tc.About, w)
		}
	}
	if tc.During != nil && !out.fired {
		t.Errorf("the edit was never made: the verb never printed %q", tc.During.When)
	}
	if tc.Journal == nil {
		assertUnchanged(ctx, t, c, before)
		return
	}
	assertUnchanged(ctx, t, c, before, "journal "+testbed.OperatorsNamespace+"/"+journal)
	var cm corev1.ConfigMap
	must(t, c.Get(ctx, client.ObjectKey{Namespace: testbed.OperatorsNamespace, Name: journal}, &cm))
	if cm.Data["completed"] != tc.Journal.Completed || !strings.HasPrefix(cm.Data["failed"], tc.Journal.Failed+": ") {
		t.Errorf("the journal records steps %q done and %q failed, want %q and %q", cm.Data["completed"], cm.Data["failed"], tc.Journal.Completed, tc.Journal.Failed)
	}
}

// run runs the case's verb with its options.
func (tc *migrateCase) run(ctx context.Context, s *testbed.Stack, config *rest.Config, out io.Writer) error {
	o := tc.Options
	opts := options(s, o.DryRun == nil || *o.DryRun, nil)
	opts.Config, opts.Out, opts.Progress = config, out, out
	if o.Output != "" {
		opts.Output = o.Output
	}
	if tc.Verb == "cso" {
		return (&cso.Migrate{Options: opts, Driver: o.Driver, AcceptNamespaceMove: o.AcceptNamespaceMove}).Run(ctx)
	}
	m := &subscription.Migrate{Options: opts, Source: o.Source, SourceNamespace: o.SourceNamespace, Channel: o.Channel}
	if m.Source == "" {
		m.Source = certifiedSource
	}
	if m.SourceNamespace == "" {
		m.SourceNamespace = testbed.OLMNamespace
	}
	return m.Run(ctx)
}

// createObject creates one of a case's objects and deletes it after the case.
func createObject(ctx context.Context, t *testing.T, c client.Client, o objectYAML) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: o}
	if obj.GetKind() == "ConfigMap" {
		data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
		if data["checksum"] == "$CHECKSUM" {
			data["checksum"] = journalChecksum(data)
			must(t, unstructured.SetNestedStringMap(obj.Object, data, "data"))
		}
	}
	must(t, c.Create(ctx, obj))
	t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
}

// journalChecksum is the checksum csi-olm writes in a journal: the SHA-256 of the facts, the
// steps done and the phase, each followed by a NUL byte. Written here again rather than
// imported, it pins the format journals on clusters already have.
func journalChecksum(data map[string]string) string {
	h := sha256.New()
	for _, key := range []string{"facts.json", "completed", "phase"} {
		h.Write([]byte(data[key]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// object is the patched object, as it is addressed.
func (p *objectPatch) object() (*unstructured.Unstructured, client.ObjectKey) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(p.APIVersion)
	obj.SetKind(p.Kind)
	return obj, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}
}

// restoreSpecAfter puts the spec of the object a case edits back after the case, as it is
// before the run: the verb may have changed it too.
func restoreSpecAfter(ctx context.Context, t *testing.T, c client.Client, e *objectPatch) {
	t.Helper()
	obj, key := e.object()
	must(t, c.Get(ctx, key, obj))
	spec := obj.Object["spec"]
	t.Cleanup(func() {
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(context.Background(), key, obj); err != nil {
				return err
			}
			obj.Object["spec"] = spec
			return c.Update(context.Background(), obj)
		}))
	})
}

// editObject makes a case's edit as another admin would.
func editObject(ctx context.Context, t *testing.T, c client.Client, e *objectPatch) {
	t.Helper()
	obj, key := e.object()
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	merge, err := json.Marshal(e.Merge)
	must(t, err)
	must(t, c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, merge), client.FieldOwner("kubectl-edit")))
}

// olmTookIn returns once every resolution OLM makes of the Subscription's namespace reads the
// Subscription as edited. A resolution reads the namespace's Subscriptions twice, once for the
// approval of the InstallPlan it may create (syncResolvingNamespace) and once to resolve
// (ResolveSteps): one that began before an edit and resolved after the verb's switch planned the
// upgrade with the approval it read first, Automatic, though the case had set Manual. OLM
// resolves a namespace one resolution at a time, so once a resolution that began after the edit
// has ended, every later one reads it. What shows such a resolution is what OLM writes: a
// channel the package lacks makes it set ResolutionFailed, naming the channel; the channel put
// back makes the next resolution, which began after that one ended, remove the condition.
func olmTookIn(ctx context.Context, c client.Client, edited *objectPatch) error {
	ctx, cancel := progress.WithStall(ctx, flowStall)
	defer cancel()
	const barrier = "csi-olm-test-barrier"
	var sub operatorsv1alpha1.Subscription
	key := client.ObjectKey{Namespace: edited.Namespace, Name: edited.Name}
	if err := c.Get(ctx, key, &sub); err != nil {
		return err
	}
	channel := sub.Spec.Channel
	setChannel := func(ch string) error {
		patch := fmt.Appendf(nil, `{"spec":{"channel":%q}}`, ch)
		return c.Patch(ctx, &sub, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("csi-olm-test"))
	}
	failed := func(s *operatorsv1alpha1.Subscription) *operatorsv1alpha1.SubscriptionCondition {
		cond := s.Status.GetCondition(operatorsv1alpha1.SubscriptionResolutionFailed)
		return &cond
	}
	if err := setChannel(barrier); err != nil {
		return err
	}
	if _, err := testbed.WaitForSubscription(ctx, c, key.Namespace, key.Name, "ResolutionFailed for channel "+barrier, func(s *operatorsv1alpha1.Subscription) bool {
		cond := failed(s)
		return cond.Status == corev1.ConditionTrue && strings.Contains(cond.Message, barrier)
	}); err != nil {
		return err
	}
	if err := setChannel(channel); err != nil {
		return err
	}
	_, err := testbed.WaitForSubscription(ctx, c, key.Namespace, key.Name, "no ResolutionFailed on channel "+channel, func(s *operatorsv1alpha1.Subscription) bool {
		return s.Spec.Channel == channel && failed(s).Status != corev1.ConditionTrue
	})
	return err
}

// resetCase puts the shared test bed back after a case: it deletes the journals the run left and
// waits until OLM has settled on the restored Subscription, so that the next case starts afresh.
func resetCase(ctx context.Context, c client.Client) error {
	ctx, cancel := progress.WithStall(ctx, flowStall)
	defer cancel()
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.HasLabels{"migrate.csi-olm.io/verb"}); err != nil {
		return fmt.Errorf("listing the journals: %w", err)
	}
	for i := range cms.Items {
		if err := c.Delete(ctx, &cms.Items[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting journal %s: %w", cms.Items[i].Name, err)
		}
	}
	_, err := testbed.WaitForSubscription(ctx, c, testbed.OperatorsNamespace, efsPackage, fmt.Sprintf("AtLatestKnown %s on %s", communityHeadCSV, communitySource),
		func(sub *operatorsv1alpha1.Subscription) bool {
			return sub.Spec.CatalogSource == communitySource && sub.Status.State == operatorsv1alpha1.SubscriptionStateAtLatest && sub.Status.InstalledCSV == communityHeadCSV
		})
	return err
}
