package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sample is a package whose tests pass, fail, skip, log and panic, run by the real go test.
var sample = map[string]string{
	"go.mod": "module sample\n\ngo 1.24\n",
	"a/a_test.go": `package a

import (
	"testing"
	"time"
)

func TestPasses(t *testing.T) { t.Log("passing-output") }

func TestSlow(t *testing.T) { time.Sleep(300 * time.Millisecond) }

func TestSkips(t *testing.T) { t.Skip("skipped-output") }

func TestFails(t *testing.T) {
	t.Run("sub", func(t *testing.T) { t.Error("subtest-failure") })
	t.Log("parent-output")
}
`,
	"c/c_test.go": "package c\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
	"b/b_test.go": `package b

import "testing"

func TestPanics(t *testing.T) {
	t.Log("before-the-panic")
	panic("the-panic")
}
`,
}

func TestTeeAndSlowest(t *testing.T) {
	dir := t.TempDir()
	for name, body := range sample {
		must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	stream, err := cmd.Output()
	if err == nil {
		t.Fatal("go test passed a package with failing tests")
	}

	ledger := filepath.Join(dir, "ledger", "run.jsonl")
	var out bytes.Buffer
	tee := &teeAction{In: bytes.NewReader(stream), Out: &out, File: ledger}
	must(t, tee.Run())
	printed := out.String()
	for _, want := range []string{
		"subtest-failure", "parent-output", "--- FAIL: TestFails", "FAIL\tsample/a",
		"before-the-panic", "panic: the-panic", "FAIL\tsample/b", "ok  \tsample/c",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("the printed output lacks %q:\n%s", want, printed)
		}
	}
	for _, unwanted := range []string{"passing-output", "skipped-output", "=== RUN", "\nPASS\n"} {
		if strings.Contains(printed, unwanted) {
			t.Errorf("the printed output has %q, which go test without -v does not print:\n%s", unwanted, printed)
		}
	}
	kept, err := os.ReadFile(ledger)
	must(t, err)
	if !bytes.Equal(kept, stream) {
		t.Error("the ledger file is not the stream go test wrote")
	}

	out.Reset()
	slowest := &slowestAction{Files: []string{ledger}, N: 2, Out: &out}
	must(t, slowest.Run())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "pass sample/a TestSlow") {
		t.Fatalf("slowest -n 2 printed:\n%s\nwant a heading and two tests, TestSlow first", out.String())
	}
	if strings.Contains(out.String(), "TestFails/sub") {
		t.Error("slowest lists a subtest; it lists top-level tests")
	}
}

func TestSlowestRejectsWhatIsNotALedger(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	must(t, os.WriteFile(bad, []byte("{\"Action\":\"pass\"\n"), 0o644))
	err := (&slowestAction{Files: []string{bad}, N: 1, Out: &bytes.Buffer{}}).Run()
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Fatalf("err = %v, want one naming the file and line", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
