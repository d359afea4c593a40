// Package shell is the POSIX shell of the csi-olm image. The image has no distribution under it,
// so /bin/sh there is csi-olm itself, run under that name: a CI step that runs a script in the
// image (a Tekton script, a GitHub Actions run line, docs/ci/check-catalogs.sh) finds the shell
// it expects, and the image still holds only csi-olm and opm. The interpreter is mvdan.cc/sh's,
// limited to POSIX syntax, so a script that runs here runs under dash or bash too.
package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Name is the name csi-olm runs as a shell under (its argv[0], /bin/sh in the image).
const Name = "sh"

// Exit statuses of the shell itself, as dash and bash use them.
const (
	usageStatus    = 2
	notFoundStatus = 127
)

// Main runs sh's command line and returns the exit status:
//
//	sh [-eux...] -c command [name [arg...]]   run command, $0 = name
//	sh [-eux...] file [arg...]                run the script in file
//	sh [-eux...]                              run the script on stdin
//
// The options are set's (-e, -u, -x, -o pipefail...); +e and the like turn one off.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var opts []string
	command := false
	for len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') {
		arg := args[0]
		args = args[1:]
		if arg == "--" {
			break
		}
		for _, c := range arg[1:] {
			switch {
			case c == 'c' && arg[0] == '-':
				command = true
			case c == 'o':
				// -o pipefail and the like: the option's name is the next argument.
				if len(args) == 0 {
					fmt.Fprintf(stderr, "sh: %co: option requires an argument\n", arg[0])
					return usageStatus
				}
				opts, args = append(opts, string(arg[0])+"o", args[0]), args[1:]
			default:
				opts = append(opts, string(arg[0])+string(c))
			}
		}
	}

	var src io.Reader
	name := Name
	switch {
	case command:
		if len(args) == 0 {
			fmt.Fprintln(stderr, "sh: -c: option requires an argument")
			return usageStatus
		}
		src, args = strings.NewReader(args[0]), args[1:]
		if len(args) > 0 {
			name, args = args[0], args[1:]
		}
	case len(args) > 0:
		f, err := os.Open(args[0])
		if err != nil {
			fmt.Fprintf(stderr, "sh: %v\n", err)
			return notFoundStatus
		}
		defer f.Close()
		src, name, args = f, args[0], args[1:]
	default:
		src = stdin
	}

	file, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(src, name)
	if err != nil {
		fmt.Fprintf(stderr, "sh: %v\n", err)
		return usageStatus
	}
	runner, err := interp.New(
		interp.StdIO(stdin, stdout, stderr),
		interp.Params(append(append(opts, "--"), args...)...),
	)
	if err != nil {
		fmt.Fprintf(stderr, "sh: %v\n", err)
		return usageStatus
	}
	err = runner.Run(ctx, file)
	if status, ok := interp.IsExitStatus(err); ok {
		return int(status)
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "sh: %v\n", err)
		}
		return 1
	}
	return 0
}
