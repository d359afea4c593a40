package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, stat, comm, start string
		seconds                 float64
		ok                      bool
	}{
		{"plain", "42 (etcd) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 9001 1 2 3", "etcd", "9001", 3, true},
		{"a name with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 77 1 2 3", "a (b) c", "77", 0.03, true},
		{"cut short", "7 (x) R 1 7", "", "", 0, false},
		{"no name", "7 x R", "", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, seconds, comm, ok := parseStat(tc.stat)
			if ok != tc.ok || start != tc.start || comm != tc.comm || seconds != tc.seconds {
				t.Errorf("parseStat = %q, %v, %q, %v; want %q, %v, %q, %v", start, seconds, comm, ok, tc.start, tc.seconds, tc.comm, tc.ok)
			}
		})
	}
}

func TestProgramName(t *testing.T) {
	for cmdline, want := range map[string]string{
		"/usr/local/go/pkg/tool/linux_amd64/link\x00-o\x00x": "link",
		"/tmp/go-build1/b001/operator.test\x00-test.v":       "operator.test",
		"": "kworker/0:1",
	} {
		if got := programName([]byte(cmdline), "kworker/0:1"); got != want {
			t.Errorf("programName(%q) = %q, want %q", cmdline, got, want)
		}
	}
}

// TestCPUSeesTheCommandsChildren runs a shell whose child shell counts to 300,000, a fixed
// amount of work of a few tenths of a second, and checks that it is listed with CPU time.
func TestCPUSeesTheCommandsChildren(t *testing.T) {
	var out, errOut bytes.Buffer
	a := &cpuAction{
		Command:  []string{"sh", "-c", `sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; exit 3`},
		N:        50,
		Interval: 50 * time.Millisecond,
		Out:      &errOut, Err: &errOut, Report: &out,
	}
	err := a.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Run = %v, want the command's exit status 3", err)
	}
	shell := -1.0
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[3] == "sh" {
			if shell, err = strconv.ParseFloat(f[0], 64); err != nil {
				t.Fatal(err)
			}
		}
	}
	if shell < 0.05 {
		t.Errorf("the shells counted to 300,000, but the report gives them %.2f s:\n%s", shell, out.String())
	}
}
