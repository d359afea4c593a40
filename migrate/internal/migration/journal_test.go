package migration

import (
	"bytes"
	"context"
	"errors"
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
	if err := j.Facts(&got); err != nil || got.CSV != "a.v1" {
		t.Fatalf("Facts = %+v, %v", got, err)
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
	for _, want := range []string{"about to: do two", "done: one", "completed"} {
		if !strings.Contains(cm.Data["log"], want) {
			t.Errorf("the journal's log lacks %q:\n%s", want, cm.Data["log"])
		}
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
