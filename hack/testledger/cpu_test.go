package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
