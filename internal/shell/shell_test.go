package shell_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/internal/shell"
)

// helperExit is the environment variable that makes the test binary a command the shell runs:
// it exits with that status, after printing its arguments.
const helperExit = "SHELL_TEST_EXIT"

func TestMain(m *testing.M) {
	if status, ok := os.LookupEnv(helperExit); ok {
		os.Stdout.WriteString(strings.Join(os.Args[1:], " ") + "\n")
		n, _ := strconv.Atoi(status)
		os.Exit(n)
	}
	os.Exit(m.Run())
}

func TestMainRunsPOSIXScripts(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "check.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$0 has $# arguments: $*\"\nexit \"${1:-0}\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		want   int
		stdout string
		stderr string
	}{
		{name: "command with $0 and arguments", args: []string{"-c", `echo "$0:$1:$2"`, "me", "a", "b c"}, stdout: "me:a:b c\n"},
		{name: "script file with arguments", args: []string{script, "3", "x"}, want: 3, stdout: script + " has 2 arguments: 3 x\n"},
		{name: "script on stdin", stdin: "echo from stdin; exit 4\n", want: 4, stdout: "from stdin\n"},
		{name: "a command's exit status", args: []string{"-c", `SHELL_TEST_EXIT=5 "$0" one two`, self}, want: 5, stdout: "one two\n"},
		{name: "-e stops at the first failure", args: []string{"-ec", `SHELL_TEST_EXIT=1 "$0"; echo not reached`, self}, want: 1, stdout: "\n"},
		{name: "+e goes on", args: []string{"-e", "+e", "-c", `SHELL_TEST_EXIT=1 "$0"; echo reached`, self}, stdout: "\nreached\n"},
		{name: "-o pipefail", args: []string{"-o", "pipefail", "-c", `SHELL_TEST_EXIT=6 "$0" | read line`, self}, want: 6},
		{name: "-u refuses an unset variable", args: []string{"-uc", `echo "$NOT_SET_ANYWHERE"`}, want: 1, stderr: "NOT_SET_ANYWHERE"},
		{name: "bash syntax is refused", args: []string{"-c", `list=(a b)`}, want: 2, stderr: "bash"},
		{name: "a missing script", args: []string{filepath.Join(dir, "absent.sh")}, want: 127, stderr: "absent.sh"},
		{name: "-c without a command", args: []string{"-c"}, want: 2, stderr: "-c: option requires an argument"},
		{name: "an unknown option", args: []string{"-Z", "-c", "true"}, want: 2, stderr: "invalid option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := shell.Main(context.Background(), tc.args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if got != tc.want || stdout.String() != tc.stdout || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("sh %q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q",
					tc.args, got, stdout.String(), stderr.String(), tc.want, tc.stdout, tc.stderr)
			}
		})
	}
}
