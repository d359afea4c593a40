package efsutilsbase

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	fetchStage  = "fetch"
	repoURL     = "https://github.com/aws/efs-utils.git"
	commitArg   = "${EFS_UTILS_COMMIT}"
	sourceDir   = "efs-utils" // the checkout, relative to the fetch stage's WORKDIR
	stagingRoot = "/out"
)

// efsUtilsFiles are the files of the pure-Python efs-utils 1.x, where its RPM spec installs them.
var efsUtilsFiles = []struct {
	dest string // in the image
	src  string // in the efs-utils repository
	mode string
}{
	{dest: "/sbin/mount.efs", src: "src/mount_efs/__init__.py", mode: "0755"},
	{dest: "/usr/bin/amazon-efs-mount-watchdog", src: "src/watchdog/__init__.py", mode: "0755"},
	{dest: "/etc/amazon/efs/efs-utils.conf", src: "dist/efs-utils.conf", mode: "0644"},
	{dest: "/etc/amazon/efs/efs-utils.crt", src: "dist/efs-utils.crt", mode: "0444"},
}

// efs-utils writes mount.log and mount-watchdog.log here and fails when it cannot.
const logDir = "/var/log/amazon/efs"

func TestDefaultsFile(t *testing.T) {
	defaults := loadDefaults(t)
	tests := []struct {
		key  string
		want *regexp.Regexp
		why  string
	}{
		{"BASE_IMAGE", regexp.MustCompile(`^registry\.access\.redhat\.com/ubi9/ubi-minimal(:[\w.-]+|@sha256:[0-9a-f]{64})$`), "the final stage is UBI 9 minimal"},
		{"BUILDER_IMAGE", regexp.MustCompile(`^[\w.-]+(/[\w.-]+)+(:[\w.-]+|@sha256:[0-9a-f]{64})$`), "the fetch stage needs a pullable image reference"},
		{"EFS_UTILS_VERSION", regexp.MustCompile(`^1\.\d+\.\d+$`), "an exact efs-utils 1.x release: 2.x needs a Rust build of efs-proxy and installs more than these files"},
		{"EFS_UTILS_COMMIT", regexp.MustCompile(`^[0-9a-f]{40}$`), "the full commit id of the release's tag, 40 lower-case hex digits: the fetch stage compares it with what git rev-parse prints"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, ok := defaults[tt.key]
			if !ok {
				t.Fatalf("%s: no %s", defaultsFile, tt.key)
			}
			if !tt.want.MatchString(got.value) {
				t.Errorf("%s:%d: %s=%q does not match %s: %s", defaultsFile, got.line, tt.key, got.value, tt.want, tt.why)
			}
		})
	}
	for key, entry := range defaults {
		if !slices.Contains(defaultKeys, key) {
			t.Errorf("%s:%d: %s is not a build arg of %s", defaultsFile, entry.line, key, baseContainerfile)
		}
	}
}

// The Containerfile repeats the defaults as ARG defaults so that a plain `podman build` works; they
// must be the recorded ones, and no stage may shadow them with its own.
func TestArgDefaultsMatchDefaultsFile(t *testing.T) {
	defaults := loadDefaults(t)
	c := parseContainerfile(t, baseContainerfile)
	for _, key := range defaultKeys {
		t.Run(key, func(t *testing.T) {
			arg := c.globalArg(t, key)
			want := defaults[key]
			if !arg.hasDefault || arg.value != want.value {
				t.Errorf("%s: ARG %s defaults to %q, but %s:%d records %q", arg.in.pos(), key, arg.value, defaultsFile, want.line, want.value)
			}
		})
	}
	for _, arg := range argsOf(c.globals) {
		if _, ok := defaults[arg.name]; arg.hasDefault && !ok {
			t.Errorf("%s: ARG %s has a default that %s does not record", arg.in.pos(), arg.name, defaultsFile)
		}
	}
	for _, s := range c.stages {
		for _, arg := range argsOf(s.instrs) {
			if arg.hasDefault {
				t.Errorf("%s: ARG %s=%s in a stage shadows the recorded default; declare it without a value", arg.in.pos(), arg.name, arg.value)
			}
		}
	}
}

func TestVersionIsPinned(t *testing.T) {
	c := parseContainerfile(t, baseContainerfile)
	cmds := c.stage(t, fetchStage).commands(t)
	fetch := findFetch(t, cmds)
	tests := []struct {
		name  string
		check func() error
	}{
		{"the sources are the pinned commit of aws/efs-utils", func() error {
			_, args := gitSubcommand(fetch.program("git"))
			if !slices.Contains(args, repoURL) || args[len(args)-1] != commitArg {
				return fmt.Errorf("%s: the fetch is not of %s from %s: %s", fetch.pos(), commitArg, repoURL, fetch.text)
			}
			return nil
		}},
		{"the version ARG is an exact release", func() error {
			arg := c.globalArg(t, "EFS_UTILS_VERSION")
			if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(arg.value) {
				return fmt.Errorf("%s: EFS_UTILS_VERSION=%q is not an exact release", arg.in.pos(), arg.value)
			}
			return nil
		}},
		{"the sources' own VERSION is checked against it", func() error {
			for _, cmd := range cmds {
				if slices.Equal(cmd.program("grep"), []string{"grep", "-Eq", `^VERSION = ["']${EFS_UTILS_VERSION}["']$`, "efs-utils/src/mount_efs/__init__.py"}) {
					return nil
				}
			}
			return fmt.Errorf("%s: stage %s does not grep src/mount_efs/__init__.py for VERSION = ${EFS_UTILS_VERSION}", c.stage(t, fetchStage).from.pos(), fetchStage)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// gitSubcommand splits a git command line into its subcommand and the words after it, skipping
// git's own options (-C dir, -c name=value, --no-pager...). It returns "" for no git command.
func gitSubcommand(argv []string) (string, []string) {
	if len(argv) == 0 || argv[0] != "git" {
		return "", nil
	}
	for i := 1; i < len(argv); i++ {
		switch word := argv[i]; {
		case word == "-C" || word == "-c":
			i++
		case strings.HasPrefix(word, "-"):
		default:
			return word, argv[i+1:]
		}
	}
	return "", nil
}

// findFetch returns the command that fetches the sources: `git ... fetch ... <url> <commit>`.
func findFetch(t *testing.T, cmds []command) command {
	t.Helper()
	for _, cmd := range cmds {
		if sub, args := gitSubcommand(cmd.program("git")); sub == "fetch" && len(args) > 0 {
			return cmd
		}
	}
	t.Fatalf("%s: stage %s never runs git fetch", baseContainerfile, fetchStage)
	return command{}
}

// findCommitCheck returns the command that compares the fetched commit with the pin:
// `test "$(git ... rev-parse ...)" = "${EFS_UTILS_COMMIT}"`, either way round.
func findCommitCheck(t *testing.T, cmds []command) command {
	t.Helper()
	for _, cmd := range cmds {
		argv := cmd.program("test")
		if argv == nil {
			argv = cmd.program("[")
		}
		if len(argv) < 4 || argv[2] != "=" && argv[2] != "==" {
			continue
		}
		for _, pair := range [][2]string{{argv[1], argv[3]}, {argv[3], argv[1]}} {
			revParse, pin := pair[0], pair[1]
			if pin == commitArg && strings.HasPrefix(revParse, "$(git ") && strings.Contains(revParse, " rev-parse ") {
				return cmd
			}
		}
	}
	t.Fatalf("%s: stage %s never compares `git rev-parse` of the fetched commit with %s (test \"$(git rev-parse ...)\" = \"%s\")", baseContainerfile, fetchStage, commitArg, commitArg)
	return command{}
}

// Git subcommands that only set up the repository and fetch into it: they read and write nothing
// of the fetched tree, so they may run before the commit is checked.
var gitBeforeCheck = []string{"init", "config", "remote", "fetch"}

func TestCommitIsVerifiedBeforeTheSourcesAreUsed(t *testing.T) {
	c := parseContainerfile(t, baseContainerfile)
	cmds := c.stage(t, fetchStage).commands(t)
	fetch := findFetch(t, cmds)
	verify := findCommitCheck(t, cmds)
	tests := []struct {
		name  string
		check func() error
	}{
		{"the check follows the fetch", func() error {
			if verify.index < fetch.index {
				return fmt.Errorf("%s: the commit is compared before the fetch", verify.pos())
			}
			return nil
		}},
		{"the check reads the fetched commit", func() error {
			if !strings.Contains(verify.text, "HEAD") { // FETCH_HEAD, or HEAD after a checkout
				return fmt.Errorf("%s: the comparison does not rev-parse FETCH_HEAD or HEAD: %s", verify.pos(), verify.text)
			}
			return nil
		}},
		{"a failed check stops the build", func() error {
			// After ; or || the next command would run anyway; at the end of a RUN the step fails.
			if verify.next != "&&" && verify.next != "" {
				return fmt.Errorf("%s: the command after the commit check is joined by %q, so it runs even when the check fails", verify.pos(), verify.next)
			}
			return nil
		}},
		{"nothing checks out, reads the sources or writes the image's files before the check", func() error {
			var errs []string
			for _, cmd := range cmds[:verify.index] {
				sub, _ := gitSubcommand(cmd.program("git"))
				switch {
				case sub != "" && !slices.Contains(gitBeforeCheck, sub):
					errs = append(errs, fmt.Sprintf("%s: git %s runs before the commit is verified: %s", cmd.pos(), sub, cmd.text))
				case strings.Contains(cmd.text, sourceDir+"/") || strings.Contains(cmd.text, stagingRoot+"/"):
					errs = append(errs, fmt.Sprintf("%s: %q runs before the commit is verified", cmd.pos(), cmd.text))
				}
			}
			if errs != nil {
				return fmt.Errorf("%s", strings.Join(errs, "\n"))
			}
			return nil
		}},
		{"an empty commit fails with a message", func() error {
			for _, cmd := range cmds[:fetch.index] {
				if argv := cmd.program("test"); slices.Equal(argv, []string{"test", "-n", commitArg}) && cmd.next == "||" {
					return nil
				}
			}
			return fmt.Errorf("%s: no `test -n \"%s\" || ...` before the fetch", fetch.pos(), commitArg)
		}},
		{"nothing downloads the sources by another way", func() error {
			var errs []string
			for _, cmd := range cmds {
				for _, tool := range []string{"curl", "wget"} {
					if cmd.program(tool) != nil {
						errs = append(errs, fmt.Sprintf("%s: %s bypasses the commit pin: %s", cmd.pos(), tool, cmd.text))
					}
				}
				if sub, _ := gitSubcommand(cmd.program("git")); sub == "clone" || sub == "pull" {
					errs = append(errs, fmt.Sprintf("%s: git %s fetches by name, not by the pinned commit: %s", cmd.pos(), sub, cmd.text))
				}
			}
			for _, s := range c.stages {
				for _, in := range s.instrs {
					if in.cmd == "add" {
						errs = append(errs, fmt.Sprintf("%s: ADD %s bypasses the commit pin", in.pos(), strings.Join(in.args, " ")))
					}
				}
			}
			if errs != nil {
				return fmt.Errorf("%s", strings.Join(errs, "\n"))
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// installedPackages returns the packages the stage's microdnf or dnf installs, and the command.
func installedPackages(t *testing.T, s stage) ([]string, command) {
	t.Helper()
	for _, cmd := range s.commands(t) {
		for _, tool := range []string{"microdnf", "dnf"} {
			argv := cmd.program(tool)
			if i := slices.Index(argv, "install"); i > 0 {
				var pkgs []string
				for _, word := range argv[i+1:] {
					if !strings.HasPrefix(word, "-") {
						pkgs = append(pkgs, word)
					}
				}
				return pkgs, cmd
			}
		}
	}
	t.Fatalf("%s:%d: the final stage installs no packages", baseContainerfile, s.from.line)
	return nil, command{}
}

func TestRuntimePackagesAreInstalled(t *testing.T) {
	pkgs, cmd := installedPackages(t, parseContainerfile(t, baseContainerfile).final())
	tests := []struct {
		pkg string
		why string
	}{
		{"nfs-utils", "mount.efs mounts with mount.nfs4"},
		{"stunnel", "the TLS tunnel of encryption in transit"},
		{"python3", "mount.efs and the watchdog are Python scripts"},
		{"openssl", "mount.efs makes its TLS client certificates with it"},
		{"util-linux", "mount(8), which the driver runs and which runs mount.efs"},
		{"which", "efs-utils 1.x looks stunnel up with `which`"},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			if !slices.Contains(pkgs, tt.pkg) {
				t.Errorf("%s: %s is not installed (%s): %s", cmd.pos(), tt.pkg, tt.why, cmd.text)
			}
		})
	}
}

func TestFilesLandAtTheirPaths(t *testing.T) {
	c := parseContainerfile(t, baseContainerfile)
	cmds := c.stage(t, fetchStage).commands(t)
	verify := findCommitCheck(t, cmds)
	final := c.final()
	for _, f := range efsUtilsFiles {
		t.Run(f.dest, func(t *testing.T) {
			staged := stagingRoot + f.dest
			want := []string{"install", "-D", "-m", f.mode, sourceDir + "/" + f.src, staged}
			i := slices.IndexFunc(cmds, func(cmd command) bool { return slices.Equal(cmd.program("install"), want) })
			if i < 0 {
				t.Errorf("%s: stage %s never runs %q", c.stage(t, fetchStage).from.pos(), fetchStage, strings.Join(want, " "))
			} else if i < verify.index {
				t.Errorf("%s: %s is staged before the commit is verified", cmds[i].pos(), f.dest)
			}
			copied := slices.ContainsFunc(final.instrs, func(in instruction) bool {
				from, _ := in.flag("from")
				return in.cmd == "copy" && from == fetchStage && slices.Equal(in.args, []string{staged, f.dest})
			})
			if !copied {
				t.Errorf("%s:%d: the final stage does not COPY --from=%s %s %s", baseContainerfile, final.from.line, fetchStage, staged, f.dest)
			}
		})
	}
	t.Run(logDir, func(t *testing.T) {
		for _, cmd := range final.commands(t) {
			if argv := cmd.program("mkdir"); slices.Contains(argv, "-p") && slices.Contains(argv, logDir) {
				return
			}
		}
		t.Errorf("%s:%d: the final stage does not mkdir -p %s", baseContainerfile, final.from.line, logDir)
	})
}

// Tools that only the fetch stage needs; none of them may run in, or be installed into, the image.
var buildTools = []string{
	"curl", "wget", "tar", "gzip", "gunzip", "unzip", "bsdtar", "git", "make", "gcc", "cc", "g++",
	"cargo", "rustc", "go", "pip", "pip3", "sha256sum", "rpmbuild",
}

var buildPackages = []string{
	"curl", "wget", "tar", "gzip", "unzip", "git", "git-core", "make", "gcc", "gcc-c++", "rpm-build",
	"python3-pip", "cargo", "rust", "golang",
}

func TestNoBuildToolIsLeftInTheFinalStage(t *testing.T) {
	c := parseContainerfile(t, baseContainerfile)
	final := c.final()
	pkgs, install := installedPackages(t, final)
	tests := []struct {
		name  string
		check func() error
	}{
		{"the final stage starts from the base image, not from the fetch stage", func() error {
			if !slices.Equal(final.from.args, []string{"${BASE_IMAGE}"}) {
				return fmt.Errorf("%s: FROM %s; want FROM ${BASE_IMAGE}", final.from.pos(), strings.Join(final.from.args, " "))
			}
			return nil
		}},
		{"no build tool runs", func() error {
			var errs []string
			for _, cmd := range final.commands(t) {
				for _, argv := range cmd.calls {
					if len(argv) == 0 {
						continue
					}
					if slices.Contains(buildTools, argv[0]) || len(argv) > 2 && argv[1] == "-m" && argv[2] == "pip" {
						errs = append(errs, fmt.Sprintf("%s: %s runs in the final stage: %s", cmd.pos(), argv[0], cmd.text))
					}
				}
			}
			if errs != nil {
				return fmt.Errorf("%s", strings.Join(errs, "\n"))
			}
			return nil
		}},
		{"no build tool is installed", func() error {
			for _, pkg := range pkgs {
				if slices.Contains(buildPackages, pkg) {
					return fmt.Errorf("%s: %s is a build tool: %s", install.pos(), pkg, install.text)
				}
			}
			return nil
		}},
		{"the package cache is cleaned in the same layer", func() error {
			cmds := final.commands(t)
			for _, cmd := range cmds[install.index+1:] {
				if cmd.in.line != install.in.line {
					break
				}
				if argv := cmd.program("microdnf"); slices.Equal(argv, []string{"microdnf", "clean", "all"}) {
					return nil
				}
			}
			return fmt.Errorf("%s: no `microdnf clean all` after the install in the same RUN", install.pos())
		}},
		{"only the staged efs-utils files are copied in", func() error {
			var errs []string
			for _, in := range final.instrs {
				switch in.cmd {
				case "add":
					errs = append(errs, fmt.Sprintf("%s: ADD in the final stage", in.pos()))
				case "copy":
					from, _ := in.flag("from")
					if from != fetchStage || len(in.args) != 2 || !strings.HasPrefix(in.args[0], stagingRoot+"/") {
						errs = append(errs, fmt.Sprintf("%s: COPY %s %s does not copy one staged file from %s", in.pos(), strings.Join(in.flags, " "), strings.Join(in.args, " "), fetchStage))
					}
				}
			}
			if errs != nil {
				return fmt.Errorf("%s", strings.Join(errs, "\n"))
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// The driver image sets its own entrypoint; one here would run in its place whenever the driver
// image forgot to.
func TestNoEntrypoint(t *testing.T) {
	c := parseContainerfile(t, baseContainerfile)
	for _, s := range c.stages {
		for _, in := range s.instrs {
			if in.cmd == "entrypoint" || in.cmd == "cmd" {
				t.Errorf("%s: %s in the base image", in.pos(), strings.ToUpper(in.cmd))
			}
		}
	}
}

func TestOCILabels(t *testing.T) {
	final := parseContainerfile(t, baseContainerfile).final()
	labels := final.labels()
	tests := []struct {
		key  string
		want string // "" for any non-empty value
	}{
		{"org.opencontainers.image.title", "efs-utils-base"},
		{"org.opencontainers.image.description", ""},
		{"org.opencontainers.image.version", "${EFS_UTILS_VERSION}"},
		{"org.opencontainers.image.source", ""},
		{"org.opencontainers.image.base.name", "${BASE_IMAGE}"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, ok := labels[tt.key]
			switch {
			case !ok || got == "":
				t.Errorf("%s:%d: the final stage has no LABEL %s", baseContainerfile, final.from.line, tt.key)
			case tt.want != "" && got != tt.want:
				t.Errorf("%s:%d: LABEL %s=%q, want %q", baseContainerfile, final.from.line, tt.key, got, tt.want)
			}
		})
	}
	// The values refer to ARGs that the final stage must import to see them.
	imported := argsOf(final.instrs)
	for _, name := range []string{"EFS_UTILS_VERSION", "BASE_IMAGE"} {
		if !slices.ContainsFunc(imported, func(a argDefault) bool { return a.name == name }) {
			t.Errorf("%s:%d: the final stage uses ${%s} in its labels without ARG %s", baseContainerfile, final.from.line, name, name)
		}
	}
}
