package images_test

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"github.com/csi-olm/csi-olm/images"
)

const containerfile = "../cmd/aws-efs-csi-driver-operator/Containerfile"

// TestContainerfileAgreesWithTheDaemonlessBuild reads the final stage of the operator's
// Containerfile as buildah would and compares what it runs, as whom, and its labels with the
// config of the image `csi-olm release` builds.
func TestContainerfileAgreesWithTheDaemonlessBuild(t *testing.T) {
	f, err := os.Open(containerfile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ast, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", containerfile, err)
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		t.Fatalf("%s: %v", containerfile, err)
	}
	final := stages[len(stages)-1]
	const version, revision = "4.11.0", "0123abc"
	env := shell.EnvsFromSlice([]string{"VERSION=" + version, "REVISION=" + revision})
	lex := shell.NewLex('\\')
	labels := map[string]string{}
	var entrypoint, copies []string
	var user string
	for _, cmd := range final.Commands {
		switch c := cmd.(type) {
		case *instructions.LabelCommand:
			for _, kv := range c.Labels {
				value, _, err := lex.ProcessWord(kv.Value, env)
				if err != nil {
					t.Fatalf("LABEL %s: %v", kv.Key, err)
				}
				labels[kv.Key] = value
			}
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			if c.PrependShell {
				t.Errorf("ENTRYPOINT is in shell form, but the image has no shell: use the JSON form")
			}
			entrypoint = c.CmdLine
		case *instructions.CopyCommand:
			copies = append(copies, c.SourcePaths[0]+" "+c.DestPath)
		}
	}
	// The final stage copies one tree, assembled by the build stage's RUN: the binary where the
	// daemonless build puts it and a world-writable /tmp.
	const rootfs = "/out/rootfs"
	if !slices.Equal(copies, []string{rootfs + "/ /"}) {
		t.Errorf("the final stage copies %q, want only the build stage's %s/ to /", copies, rootfs)
	}
	var run string
	for _, cmd := range stages[0].Commands {
		if r, ok := cmd.(*instructions.RunCommand); ok {
			run += strings.Join(r.CmdLine, " ") + "\n"
		}
	}
	for _, want := range []string{"-o " + rootfs + images.OperatorBinary + " ", "mkdir -p " + rootfs + images.TmpDir, "chmod 1777 " + rootfs + images.TmpDir} {
		if !strings.Contains(run, want) {
			t.Errorf("the build stage's RUN lacks %q:\n%s", want, run)
		}
	}
	want := images.OperatorConfig(version, revision, images.Config{}.Platform)
	if !slices.Equal(entrypoint, want.Entrypoint) {
		t.Errorf("ENTRYPOINT %q, the daemonless build runs %q", entrypoint, want.Entrypoint)
	}
	if user != want.User {
		t.Errorf("USER %q, the daemonless build runs as %q", user, want.User)
	}
	if !maps.Equal(labels, want.Labels) {
		t.Errorf("LABELs differ:\nContainerfile: %v\ndaemonless:    %v", labels, want.Labels)
	}
}
