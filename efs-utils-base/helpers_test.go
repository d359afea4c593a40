package efsutilsbase

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
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
var defaultKeys = []string{"BASE_IMAGE", "BUILDER_IMAGE", "EFS_UTILS_VERSION", "EFS_UTILS_SHA256"}

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

// command is one command (or pipeline) of a RUN in shell form, as cut at the top-level &&, ||,
// ; and newlines; next is the operator that follows it, "" for the last one.
type command struct {
	in       instruction
	index    int // position in the stage's sequence of commands
	text     string
	pipeline [][]string // the unquoted words of each element of the pipeline
	next     string
}

func (c command) pos() string { return c.in.pos() }

// program returns the words of the pipeline element that runs name, nil when none does.
func (c command) program(name string) []string {
	for _, argv := range c.pipeline {
		if len(argv) > 0 && argv[0] == name {
			return argv
		}
	}
	return nil
}

func (c command) programs() []string {
	var out []string
	for _, argv := range c.pipeline {
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

// splitShell cuts a shell command line at its top-level && || ; and newlines. It knows quotes,
// backslashes, ${...}, $(...) and { ...; } or ( ... ) groups: enough for the RUNs of these
// Containerfiles, and it fails the test on anything it cannot follow rather than guess.
func splitShell(t *testing.T, in instruction, script string) []command {
	t.Helper()
	var (
		out     []command
		current strings.Builder
		quote   rune // 0, '\'' or '"'
		depth   int
	)
	flush := func(next string) {
		text := strings.TrimSpace(current.String())
		current.Reset()
		if text == "" {
			return
		}
		out = append(out, command{in: in, text: text, pipeline: pipelineWords(t, in, text), next: next})
	}
	runes := []rune(script)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			}
		case r == '\\' && i+1 < len(runes):
			current.WriteRune(r)
			i++
			r = runes[i]
		case quote == '"':
			if r == '"' {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '$' && i+1 < len(runes) && (runes[i+1] == '{' || runes[i+1] == '('):
			current.WriteRune(r)
			i++
			r = runes[i]
			depth++
		case r == '{' || r == '(':
			depth++
		case r == '}' || r == ')':
			depth--
			if depth < 0 {
				t.Fatalf("%s: unbalanced %q in RUN", in.pos(), r)
			}
		case depth == 0 && (r == ';' || r == '\n'):
			flush(";")
			continue
		case depth == 0 && (r == '&' || r == '|') && i+1 < len(runes) && runes[i+1] == r:
			flush(string([]rune{r, r}))
			i++
			continue
		}
		current.WriteRune(r)
	}
	if quote != 0 || depth != 0 {
		t.Fatalf("%s: unterminated quote or group in RUN", in.pos())
	}
	flush("")
	return out
}

// pipelineWords splits one command into the unquoted words of each pipeline element.
func pipelineWords(t *testing.T, in instruction, text string) [][]string {
	t.Helper()
	var (
		pipeline [][]string
		words    []string
		word     strings.Builder
		inWord   bool
		quote    rune
	)
	endWord := func() {
		if inWord {
			words = append(words, word.String())
		}
		word.Reset()
		inWord = false
	}
	runes := []rune(text)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
				continue
			}
		case quote == '"':
			if r == '"' {
				quote = 0
				continue
			}
			if r == '\\' && i+1 < len(runes) && strings.ContainsRune(`"\$`+"`", runes[i+1]) {
				i++
				r = runes[i]
			}
		case r == '\\' && i+1 < len(runes):
			i++
			r = runes[i]
		case r == '\'' || r == '"':
			quote = r
			inWord = true
			continue
		case r == ' ' || r == '\t' || r == '\n':
			endWord()
			continue
		case r == '|':
			endWord()
			pipeline = append(pipeline, words)
			words = nil
			continue
		}
		word.WriteRune(r)
		inWord = true
	}
	if quote != 0 {
		t.Fatalf("%s: unterminated quote in %q", in.pos(), text)
	}
	endWord()
	return append(pipeline, words)
}

func TestSplitShell(t *testing.T) {
	in := instruction{file: "test", line: 1, cmd: "run"}
	tests := []struct {
		script string
		want   []string // per command: its pipeline elements joined by " | ", then the operator after it
	}{
		{`a && b || c; d`, []string{"a &&", "b ||", "c ;", "d "}},
		{`test -n "${X}" || { echo "x && y" >&2; exit 1; } && z`, []string{`test -n ${X} ||`, `{ echo x && y >&2; exit 1; } &&`, "z "}},
		{`echo "${S}  f" | sha256sum --check && tar -x 'a;b'`, []string{`echo ${S}  f | sha256sum --check &&`, "tar -x a;b "}},
		{`grep -Eq "^V = [\"']$(v)[\"']\$" f`, []string{`grep -Eq ^V = ["']$(v)["']$ f `}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			var got []string
			for _, cmd := range splitShell(t, in, tt.script) {
				var elements []string
				for _, argv := range cmd.pipeline {
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
