package efsutilsbase

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

const (
	baseContainerfile   = "Containerfile"
	driverContainerfile = "driver.Containerfile"
	defaultsFile        = "efs-utils.env"
	buildScript         = "../hack/build-efs-utils-base.sh"
)

// defaultEntry is one KEY=value line of efs-utils.env.
type defaultEntry struct {
	value string
	line  int
}

// The keys the build args are recorded under; the script and the Containerfile use the same names.
var defaultKeys = []string{"BASE_IMAGE", "BUILDER_IMAGE", "EFS_UTILS_VERSION", "EFS_UTILS_COMMIT"}

var defaultLine = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=(\S*)$`)

// loadDefaults reads efs-utils.env. It accepts only what bash's `read` in the build script reads
// the same way: no quotes, no spaces, no expansions.
func loadDefaults(t *testing.T) map[string]defaultEntry {
	t.Helper()
	f, err := os.Open(defaultsFile)
	if err != nil {
		t.Fatalf("open the build arg defaults: %v", err)
	}
	defer f.Close()
	entries := map[string]defaultEntry{}
	scanner := bufio.NewScanner(f)
	for line := 1; scanner.Scan(); line++ {
		text := scanner.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		m := defaultLine.FindStringSubmatch(text)
		if m == nil || strings.ContainsAny(m[2], `"'$`+"`") {
			t.Fatalf("%s:%d: %q is not a plain KEY=value line", defaultsFile, line, text)
		}
		if previous, ok := entries[m[1]]; ok {
			t.Fatalf("%s:%d: %s is already set at line %d", defaultsFile, line, m[1], previous.line)
		}
		entries[m[1]] = defaultEntry{value: m[2], line: line}
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("read %s: %v", defaultsFile, err)
	}
	return entries
}

// instruction is one Containerfile instruction with what the checks look at and where it is.
type instruction struct {
	file  string
	line  int
	cmd   string   // lower case: "run", "copy"...
	args  []string // the words after the command; a RUN in shell form is one string
	flags []string // --from=fetch...
}

func (i instruction) pos() string { return fmt.Sprintf("%s:%d", i.file, i.line) }

// flag returns the value of --name=value.
func (i instruction) flag(name string) (string, bool) {
	for _, f := range i.flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

type stage struct {
	name   string // the AS name, "" without one
	from   instruction
	instrs []instruction
}

type containerfile struct {
	path    string
	globals []instruction // the ARGs before the first FROM
	stages  []stage
}

func parseContainerfile(t *testing.T, path string) containerfile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s:%d: parser warning: %s", path, w.Location.Start.Line, w.Short)
	}
	c := containerfile{path: path}
	for _, node := range res.AST.Children {
		in := instruction{file: path, line: node.StartLine, cmd: strings.ToLower(node.Value), flags: node.Flags}
		for n := node.Next; n != nil; n = n.Next {
			in.args = append(in.args, n.Value)
		}
		switch {
		case in.cmd == "from":
			s := stage{from: in}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "as") {
				s.name = in.args[2]
			}
			c.stages = append(c.stages, s)
		case len(c.stages) == 0:
			if in.cmd != "arg" {
				t.Fatalf("%s: %s before the first FROM", in.pos(), node.Value)
			}
			c.globals = append(c.globals, in)
		default:
			last := &c.stages[len(c.stages)-1]
			last.instrs = append(last.instrs, in)
		}
	}
	if len(c.stages) == 0 {
		t.Fatalf("%s: no FROM", path)
	}
	return c
}

func (c containerfile) final() stage { return c.stages[len(c.stages)-1] }

func (c containerfile) stage(t *testing.T, name string) stage {
	t.Helper()
	for _, s := range c.stages {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("%s: no stage named %q", c.path, name)
	return stage{}
}

// argDefault is an ARG declaration: NAME or NAME=default.
type argDefault struct {
	name       string
	value      string
	hasDefault bool
	in         instruction
}

func argsOf(instrs []instruction) []argDefault {
	var out []argDefault
	for _, in := range instrs {
		if in.cmd != "arg" {
			continue
		}
		for _, word := range in.args {
			name, value, ok := strings.Cut(word, "=")
			out = append(out, argDefault{name: name, value: unquote(value), hasDefault: ok, in: in})
		}
	}
	return out
}

func (c containerfile) globalArg(t *testing.T, name string) argDefault {
	t.Helper()
	for _, a := range argsOf(c.globals) {
		if a.name == name {
			return a
		}
	}
	t.Fatalf("%s: no global ARG %s (declared before the first FROM)", c.path, name)
	return argDefault{}
}

// labels returns the LABELs of a stage; the parser gives key, raw value, "=" triples.
func (s stage) labels() map[string]string {
	out := map[string]string{}
	for _, in := range s.instrs {
		if in.cmd != "label" {
			continue
		}
		for i := 0; i+1 < len(in.args); i += 3 {
			out[in.args[i]] = unquote(in.args[i+1])
		}
	}
	return out
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// command is one command of a RUN in shell form, as cut at the top-level &&, || and ;; next is
// the operator that follows it, "" for the last one.
type command struct {
	in    instruction
	index int // position in the stage's sequence of commands
	text  string
	// calls are the expanded words of every simple command it runs: each element of a pipeline,
	// and each command of a { ...; } group.
	calls [][]string
	next  string
}

func (c command) pos() string { return c.in.pos() }

// program returns the words of the simple command that runs name, nil when none does.
func (c command) program(name string) []string {
	for _, argv := range c.calls {
		if len(argv) > 0 && argv[0] == name {
			return argv
		}
	}
	return nil
}

func (c command) programs() []string {
	var out []string
	for _, argv := range c.calls {
		if len(argv) > 0 {
			out = append(out, argv[0])
		}
	}
	return out
}

// commands returns the commands of every RUN of the stage, in order.
func (s stage) commands(t *testing.T) []command {
	t.Helper()
	var out []command
	for _, in := range s.instrs {
		if in.cmd != "run" {
			continue
		}
		if len(in.args) != 1 {
			t.Fatalf("%s: RUN in exec form; the checks read shell-form RUNs only", in.pos())
		}
		for _, part := range splitShell(t, in, in.args[0]) {
			part.index = len(out)
			out = append(out, part)
		}
	}
	return out
}

// splitShell parses a RUN's script as the shell does (mvdan.cc/sh) and cuts it at its top-level
// &&, || and ;.
func splitShell(t *testing.T, in instruction, script string) []command {
	t.Helper()
	file, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), in.pos())
	if err != nil {
		t.Fatalf("%s: RUN is not a POSIX shell script: %v", in.pos(), err)
	}
	var out []command
	var cut func(stmt *syntax.Stmt, next string)
	cut = func(stmt *syntax.Stmt, next string) {
		if b, ok := stmt.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.AndStmt || b.Op == syntax.OrStmt) {
			cut(b.X, b.Op.String())
			cut(b.Y, next)
			return
		}
		var text strings.Builder
		if err := syntax.NewPrinter(syntax.SingleLine(true)).Print(&text, stmt); err != nil {
			t.Fatalf("%s: %v", in.pos(), err)
		}
		out = append(out, command{in: in, text: text.String(), calls: calls(t, in, stmt), next: next})
	}
	for i, stmt := range file.Stmts {
		next := ";"
		if i == len(file.Stmts)-1 {
			next = ""
		}
		cut(stmt, next)
	}
	return out
}

// keepReferences expands words the way the shell removes quotes and escapes, but leaves each
// parameter or command substitution as written: the checks compare against the Containerfile's
// own ${ARG} references.
var keepReferences = &expand.Config{
	Env: expand.FuncEnviron(func(name string) string { return "${" + name + "}" }),
	CmdSubst: func(w io.Writer, cs *syntax.CmdSubst) error {
		return syntax.NewPrinter(syntax.SingleLine(true)).Print(w, cs)
	},
}

// calls returns the words of every simple command in a statement, in order.
func calls(t *testing.T, in instruction, stmt *syntax.Stmt) [][]string {
	t.Helper()
	var out [][]string
	syntax.Walk(stmt, func(node syntax.Node) bool {
		call, ok := node.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var argv []string
		for _, word := range call.Args {
			field, err := expand.Literal(keepReferences, word)
			if err != nil {
				t.Fatalf("%s: %v", in.pos(), err)
			}
			argv = append(argv, field)
		}
		out = append(out, argv)
		return false
	})
	return out
}

func TestSplitShell(t *testing.T) {
	in := instruction{file: "test", line: 1, cmd: "run"}
	tests := []struct {
		script string
		want   []string // per command: its simple commands joined by " | ", then the operator after it
	}{
		{`a && b || c; d`, []string{"a &&", "b ||", "c ;", "d "}},
		{`test -n "${X}" || { echo "x && y" >&2; exit 1; } && z`, []string{`test -n ${X} ||`, `echo x && y | exit 1 &&`, "z "}},
		{`echo "${S}  f" | sha256sum --check && tar -x 'a;b'`, []string{`echo ${S}  f | sha256sum --check &&`, "tar -x a;b "}},
		{`grep -Eq "^V = [\"']${V}[\"']\$" f`, []string{`grep -Eq ^V = ["']${V}["']$ f `}},
		{"a \\\n  && b", []string{"a &&", "b "}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			var got []string
			for _, cmd := range splitShell(t, in, tt.script) {
				var elements []string
				for _, argv := range cmd.calls {
					elements = append(elements, strings.Join(argv, " "))
				}
				got = append(got, strings.Join(elements, " | ")+" "+cmd.next)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("splitShell(%q)\n got %q\nwant %q", tt.script, got, tt.want)
			}
		})
	}
}
