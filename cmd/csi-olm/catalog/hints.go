package catalog

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/csi-olm/csi-olm/catalog/predict"
	"github.com/csi-olm/csi-olm/internal/option"
)

// The domain packages name what is wrong by their own terms (an action struct's field, a start
// the catalogs lack); only here are those terms flags.

// fieldAnnotation marks a flag with the action struct's field it fills.
const fieldAnnotation = "csi-olm/field"

// fills records that flag fills the action struct's field, so that an option.Error about the
// field names the flag.
func fills(f *pflag.FlagSet, flag, field string) {
	if err := f.SetAnnotation(flag, fieldAnnotation, []string{field}); err != nil {
		panic(err) // a flag name misspelt here is a programming error, caught by the command tests
	}
}

// hinted is an error whose message names the flags to use; it unwraps to the domain's error.
type hinted struct {
	msg string
	err error
}

func (h *hinted) Error() string { return h.msg }
func (h *hinted) Unwrap() error { return h.err }

// withHints words a verb's error in terms of its flags.
func withHints(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	var oe *option.Error
	if errors.As(err, &oe) {
		if name := flagFilling(cmd.Flags(), oe.Field); name != "" {
			return &hinted{strings.Replace(err.Error(), oe.Error(), "--"+name+": "+oe.Err.Error(), 1), err}
		}
	}
	var se *predict.StartError
	if errors.As(err, &se) {
		hint := ""
		switch {
		case se.Kind == predict.CSVNotInCatalog && !cmd.Flags().Changed("installed-from"):
			hint = "name the catalog it was installed from with --installed-from"
		case se.Kind == predict.AmbiguousCSV:
			hint = "name its package with --package"
		case se.Kind == predict.NoChannel:
			hint = "name one with --channel"
		}
		if hint != "" {
			return &hinted{err.Error() + ": " + hint, err}
		}
	}
	return err
}

func flagFilling(f *pflag.FlagSet, field string) string {
	name := ""
	f.VisitAll(func(fl *pflag.Flag) {
		if v := fl.Annotations[fieldAnnotation]; len(v) == 1 && v[0] == field {
			name = fl.Name
		}
	})
	return name
}

// environmentFlags are the flags that describe the rest of the cluster, for simulate and diff.
func environmentFlags(f *pflag.FlagSet, env *predict.Environment) {
	f.StringArrayVar(&env.Catalogs, "with-catalog", nil, "another CatalogSource of the cluster, providing dependencies: a directory or image, optionally followed by ,priority=N (repeatable)")
	f.StringArrayVar(&env.Packages, "existing-operator", nil, "an operator the cluster has installed, as PACKAGE@VERSION (repeatable)")
	f.StringArrayVar(&env.APIs, "existing-api", nil, "an API an installed operator provides, as GROUP/VERSION/KIND (repeatable)")
	fills(f, "existing-operator", "Environment.Packages")
	fills(f, "existing-api", "Environment.APIs")
}
