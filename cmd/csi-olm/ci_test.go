package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csi-olm/csi-olm/docs/ci"
	"github.com/csi-olm/csi-olm/internal/exitcode"
	"github.com/csi-olm/csi-olm/test/synthcatalog"
)

// asMain makes the test binary run csi-olm's main: as csi-olm, and as the sh it is when run
// under that name. TestCheckCatalogsScript runs the CI recipe's script so.
const asMain = "CSI_OLM_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) != "" {
		main()
	}
	os.Exit(m.Run())
}

// TestCheckCatalogsScript runs docs/ci/check-catalogs.sh, as the csi-olm image carries it, with
// csi-olm's own shell and verbs (this test binary under the names sh and csi-olm): its verdict
// on a tree as published, on a change that breaks it, and on input it cannot use. The published
// catalogs are directories here, which the catalog verbs read as they read images; the
// end-to-end test (TestCLIImageOnRealNode) runs it in the image, against the registry.
func TestCheckCatalogsScript(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, work := t.TempDir(), t.TempDir()
	for _, name := range []string{"sh", "csi-olm"} {
		if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(work, "check-catalogs.sh")
	if err := os.WriteFile(script, ci.CheckCatalogs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"published/certified", "change/certified"} {
		for _, minor := range []string{"v4.10", "v4.11"} {
			if err := os.CopyFS(filepath.Join(work, dir, minor), os.DirFS("../../catalog/certified/"+minor)); err != nil {
				t.Fatal(err)
			}
		}
	}
	catalogs := filepath.Join(work, "catalogs.txt")
	lines := "community v4.11 " + filepath.Join(work, "elsewhere") + "\n"
	for _, minor := range []string{"v4.10", "v4.11"} {
		lines += "certified " + minor + " " + filepath.Join(work, "published/certified", minor) + "\n"
	}
	if err := os.WriteFile(catalogs, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	// The change drops v4.11's channel 4.10: a breaking change, and a stranded upgrade.
	v411 := filepath.Join(work, "change/certified/v4.11")
	if err := synthcatalog.DropChannel(t.Context(), v411, "4.10"); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		args    []string
		changed string
		// extra are lines catalogs.txt has beside lines.
		extra string
		want  int
		says  []string
		// portable runs the case under the system's /bin/sh too. Each run costs a few seconds of
		// this race-built binary's start-ups, so one case, the one that uses every construct of
		// the script, proves it portable.
		portable bool
	}{
		{name: "the published tree passes", args: []string{"published/certified", "catalogs.txt", "published/certified"},
			says: []string{"validate certified v4.10", "diff --breaking certified v4.11", "certified passed every check (v4.10 v4.11)"}},
		{name: "a breaking change fails with its reasons", args: []string{"change/certified", "catalogs.txt", "published/certified"}, want: exitcode.Findings,
			says: []string{"channel 4.10", "diff --breaking certified v4.11 (exit 1)", "cluster-upgrade certified (exit 1)"}, portable: true},
		{name: "only the changed minors are diffed", args: []string{"change/certified", "catalogs.txt"}, changed: "v4.10", want: exitcode.Findings,
			says: []string{"certified failed:\n  cluster-upgrade certified (exit 1)\n"}},
		{name: "a published minor removed", args: []string{"change/certified", "catalogs.txt", "published/certified"}, changed: "v4.9 v4.12", want: exitcode.Findings,
			extra: "certified v4.12 " + filepath.Join(work, "published/certified/v4.11") + "\n",
			says:  []string{"certified v4.9: neither in change/certified nor published", "certified v4.12: published as", "gone"}},
		{name: "an unreadable published list", args: []string{"published/certified", "absent.txt"}, want: exitcode.Failure,
			says: []string{"cannot read absent.txt"}},
		{name: "a missing argument", args: []string{"published/certified"}, want: exitcode.Failure,
			says: []string{"usage: check-catalogs.sh TREE PUBLISHED [SINCE]"}},
		{name: "a check that cannot run wins over findings", args: []string{"change/certified", "catalogs.txt", "absent"}, changed: "v4.11", want: exitcode.Failure,
			says: []string{"diff --breaking certified v4.11 (exit 1)", "cluster-upgrade certified (exit 2)"}},
	} {
		if err := os.WriteFile(catalogs, []byte(lines+tc.extra), 0o644); err != nil {
			t.Fatal(err)
		}
		// Under csi-olm's shell, as in the image, and under the system's /bin/sh (its #! line),
		// which a pipeline running the script outside the image has.
		shells := map[string][]string{"csi-olm's sh": {filepath.Join(bin, "sh"), script}}
		if tc.portable {
			shells["/bin/sh"] = []string{script}
		}
		for shell, argv := range shells {
			t.Run(tc.name+" under "+shell, func(t *testing.T) {
				cmd := exec.Command(argv[0], append(argv[1:], tc.args...)...)
				cmd.Dir = work
				cmd.Env = append(os.Environ(), asMain+"=1", "PATH="+bin, "CHANGED="+tc.changed)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				code := 0
				if exit, ok := err.(*exec.ExitError); ok {
					code = exit.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				for _, says := range tc.says {
					if code != tc.want || !strings.Contains(out.String(), says) {
						t.Errorf("check-catalogs.sh %s: exit %d, want %d and a report saying %q:\n%s", strings.Join(tc.args, " "), code, tc.want, says, out.String())
					}
				}
			})
		}
	}
}
