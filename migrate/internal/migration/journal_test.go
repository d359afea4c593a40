package migration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

type facts struct {
	Namespace string `json:"namespace"`
	CSV       string `json:"csv"`
}

func (f *facts) Problems(namespace, _ string) []string {
	if f.Namespace != namespace {
		return []string{"namespace " + f.Namespace + " is not " + namespace}
	}
	return nil
}

func TestJournalResumesAfterTheLastRecordedStep(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	if j, err := Find(ctx, c, "cso", "ebs"); err != nil || j != nil {
		t.Fatalf("Find on an empty cluster = %v, %v", j, err)
	}
	j, err := Create(ctx, c, "operators", "cso", "ebs", facts{Namespace: "operators", CSV: "a.v1"})
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	fail := errors.New("boom")
	step := func(name string, err error) Step {
		return Step{Name: name, Description: "do " + name, Do: func(context.Context) error { ran = append(ran, name); return err }}
	}
	var out bytes.Buffer
	err = j.Run(ctx, &out, []Step{step("one", nil), step("two", fail), step("three", nil)})
	var stepErr *StepError
	if !errors.As(err, &stepErr) || stepErr.Step != "two" || !errors.Is(err, fail) {
		t.Fatalf("Run = %v, want step two's error", err)
	}

	// A new process finds the journal and its facts, and skips the step recorded as done.
	j, err = Find(ctx, c, "cso", "ebs")
	if err != nil || j == nil {
		t.Fatalf("Find = %v, %v", j, err)
	}
	var got facts
	if err := j.trust("cso", "ebs", []string{"one", "two", "three"}, &got); err != nil || got.CSV != "a.v1" {
		t.Fatalf("trust = %+v, %v", got, err)
	}
	ran, out = nil, bytes.Buffer{}
	if err := j.Run(ctx, &out, []Step{step("one", nil), step("two", nil), step("three", nil)}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ran, ",") != "two,three" {
		t.Errorf("the resumed run ran %v, want two,three", ran)
	}
	if !strings.Contains(out.String(), "[1/3] do one: done before") || !j.Completed() {
		t.Errorf("completed=%v, output:\n%s", j.Completed(), out.String())
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "operators", Name: Name("cso", "ebs")}, &cm); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"about to: do two", "failed: two: boom", "done: one", "completed"} {
		if !strings.Contains(cm.Data["log"], want) {
			t.Errorf("the journal's log lacks %q:\n%s", want, cm.Data["log"])
		}
	}
}

func TestAStepThatChangedNothingLeavesNoJournal(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	j, err := Create(ctx, c, "operators", "cso", "ebs", facts{Namespace: "operators"})
	if err != nil {
		t.Fatal(err)
	}
	refused := fmt.Errorf("the Subscription changed: %w", ErrNothingChanged)
	err = j.Run(ctx, io.Discard, []Step{{Name: "one", Do: func(context.Context) error { return refused }}})
	var stepErr *StepError
	if !errors.As(err, &stepErr) || !stepErr.Discarded || !errors.Is(err, ErrNothingChanged) {
		t.Fatalf("Run = %v, want the refusal with the journal discarded", err)
	}
	if j, err := Find(ctx, c, "cso", "ebs"); err != nil || j != nil {
		t.Errorf("the journal of a run that changed nothing is still there: %v, %v", j, err)
	}
}

// TestTrustRefusesEditedJournals edits a journal csi-olm wrote as a hand, a truncation or
// another verb would, and checks that each problem is named with its key.
func TestTrustRefusesEditedJournals(t *testing.T) {
	steps := []string{"one", "two", "three"}
	cases := []struct {
		name string
		edit func(cm *corev1.ConfigMap)
		want []string
	}{{
		name: "as written",
		edit: func(*corev1.ConfigMap) {},
	}, {
		name: "garbage facts",
		edit: func(cm *corev1.ConfigMap) { cm.Data[factsKey] = "{not json" },
		want: []string{"key facts.json is not a record of migration cso ebs: invalid character", "key checksum does not match"},
	}, {
		name: "truncated facts",
		edit: func(cm *corev1.ConfigMap) { cm.Data[factsKey] = cm.Data[factsKey][:10] },
		want: []string{"key facts.json is not a record of migration cso ebs: unexpected EOF"},
	}, {
		name: "facts of another verb",
		edit: func(cm *corev1.ConfigMap) { cm.Data[factsKey] = `{"namespace": "operators", "installedCSV": "a.v1"}` },
		want: []string{`key facts.json is not a record of migration cso ebs: json: unknown field "installedCSV"`},
	}, {
		name: "facts the verb rejects",
		edit: func(cm *corev1.ConfigMap) { cm.Data[factsKey] = `{"namespace": "elsewhere"}` },
		want: []string{"key facts.json: namespace elsewhere is not operators"},
	}, {
		name: "unknown and repeated steps",
		edit: func(cm *corev1.ConfigMap) { cm.Data[completedKey] = "one rollback one" },
		want: []string{`key completed names step "rollback", which migration cso does not have (its steps: one, two, three)`, `key completed names step "one" twice`},
	}, {
		name: "a step done before the one that runs first",
		edit: func(cm *corev1.ConfigMap) { cm.Data[completedKey] = "two" },
		want: []string{"key completed records step two as done, but not step one, which runs before it"},
	}, {
		name: "completed with steps left",
		edit: func(cm *corev1.ConfigMap) { cm.Data[completedKey], cm.Data[phaseKey] = "one", Completed },
		want: []string{"key phase is Completed, but key completed lacks step two, three"},
	}, {
		name: "unknown phase",
		edit: func(cm *corev1.ConfigMap) { cm.Data[phaseKey] = "RollingBack" },
		want: []string{`key phase is "RollingBack", which is neither InProgress nor Completed`},
	}, {
		name: "no checksum",
		edit: func(cm *corev1.ConfigMap) { delete(cm.Data, checksumKey) },
		want: []string{"it has no key checksum"},
	}, {
		name: "emptied",
		edit: func(cm *corev1.ConfigMap) { cm.Data = map[string]string{} },
		want: []string{"it has no key facts.json", "it has no key phase", "it has no key checksum"},
	}, {
		name: "misnamed",
		edit: func(cm *corev1.ConfigMap) { cm.Name = "copy" },
		want: []string{"it carries the labels of the journal of migration cso ebs, but that journal is named csi-olm-migrate-cso-ebs"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
			j, err := Create(ctx, c, "operators", "cso", "ebs", facts{Namespace: "operators", CSV: "a.v1"})
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(j.cm)
			err = j.trust("cso", "ebs", steps, &facts{})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("a journal as csi-olm wrote it is refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("the edited journal is trusted")
			}
			for _, want := range append(tc.want, "cannot trust ConfigMap operators/", "kubectl delete configmap -n operators ") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

func TestFindRefusesSeveralJournals(t *testing.T) {
	journal := func(namespace string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: Name("cso", "ebs"),
			Labels: map[string]string{VerbLabel: "cso", TargetLabel: "ebs"}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(journal("a"), journal("b")).Build()
	_, err := Find(context.Background(), c, "cso", "ebs")
	if err == nil || !strings.Contains(err.Error(), "found 2 journals of migration cso ebs (a/csi-olm-migrate-cso-ebs, b/csi-olm-migrate-cso-ebs)") {
		t.Errorf("err = %v", err)
	}
}

func TestWait(t *testing.T) {
	cases := []struct {
		name    string
		check   func(n int) (bool, string, error)
		wantErr string
		wantOut string
	}{
		{"done after two polls", func(n int) (bool, string, error) { return n >= 2, "polled", nil }, "", "waiting 0s for the thing: polled"},
		{"fatal error", func(int) (bool, string, error) { return false, "", errors.New("CSV failed") }, "CSV failed", ""},
		{"time out names the last status", func(int) (bool, string, error) { return false, "still Installing", nil }, "gave up waiting for the thing after 500ms: still Installing", "still Installing"},
		// A check that runs into the deadline reports on the deadline, not on the cluster.
		{"a check cut short by the deadline keeps the last status", func(n int) (bool, string, error) {
			if n > 1 {
				time.Sleep(time.Second)
				return false, "cannot read it: rate: Wait(n=1) would exceed context deadline", nil
			}
			return false, "still Installing", nil
		}, "gave up waiting for the thing after 500ms: still Installing", "still Installing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			n := 0
			err := Wait(context.Background(), &out, "the thing", 500*time.Millisecond, func(context.Context) (bool, string, error) {
				n++
				return tc.check(n)
			})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output %q lacks %q", out.String(), tc.wantOut)
			}
		})
	}
}

// TestWaitChecksOutliveTheDeadline: a check on the wait's own deadline would have client-go's
// rate limiter refuse its requests before the deadline, and the timeout report that.
func TestWaitChecksOutliveTheDeadline(t *testing.T) {
	timeout := 300 * time.Millisecond
	end := time.Now().Add(timeout)
	var deadlines []time.Time
	_ = Wait(context.Background(), io.Discard, "the thing", timeout, func(ctx context.Context) (bool, string, error) {
		d, _ := ctx.Deadline()
		deadlines = append(deadlines, d)
		return false, "", nil
	})
	for _, d := range deadlines {
		if d.Before(end.Add(checkGrace / 2)) {
			t.Fatalf("a check's deadline is %s, the wait's about %s: the check cannot outlive it", d, end)
		}
	}
}

func TestCheckFormatAndEncode(t *testing.T) {
	if err := CheckFormat("xml"); err == nil || err.Error() != `unknown output format "xml": use text, yaml or json` {
		t.Errorf("CheckFormat(xml) = %v", err)
	}
	for format, want := range map[string]string{"yaml": "csv: a.v1\n", "json": `"csv": "a.v1"`} {
		var out bytes.Buffer
		if err := Encode(&out, format, facts{CSV: "a.v1"}); err != nil || !strings.Contains(out.String(), want) {
			t.Errorf("Encode(%s) = %q, %v", format, out.String(), err)
		}
	}
}
