// Package exitcode is how csi-olm tells a pipeline findings from failures, as linters and
// `opm validate` do: a verb that ran and found its input wrong (an invalid bundle or catalog, a
// breaking change, an unresolvable start, SharedVolumes that fail a check) exits 1; a verb that
// could not do its job (a mistyped flag, an unreadable input, a registry or cluster it cannot
// reach) exits 2. A pipeline can then fail a change on 1 and retry, or page, on 2.
package exitcode

const (
	// OK: the verb ran and found nothing wrong.
	OK = 0
	// Findings: the verb ran and found its input wrong.
	Findings = 1
	// Failure: the verb could not do its job.
	Failure = 2
)

// Help is the exit status a verb's help states, findings naming what the verb finds.
func Help(findings string) string {
	return "Exit status: 0 when nothing is found; 1 when " + findings + "; 2 when the verb cannot do its job (a bad flag, an unreadable input, a registry or cluster out of reach)."
}

// FindingsError is the error of a verb that ran and found its input wrong.
type FindingsError struct{ Err error }

func (e *FindingsError) Error() string { return e.Err.Error() }

func (e *FindingsError) Unwrap() error { return e.Err }

// Found marks err, a verb's findings, for exit status 1.
func Found(err error) error {
	if err == nil {
		return nil
	}
	return &FindingsError{Err: err}
}

// Of is the exit status of a verb that returned err. Errors joined from several inputs are
// findings only when every one is: an input the verb could not read is a failure, whatever it
// found in the others.
func Of(err error) int {
	switch {
	case err == nil:
		return OK
	case onlyFindings(err):
		return Findings
	default:
		return Failure
	}
}

func onlyFindings(err error) bool {
	switch e := err.(type) {
	case *FindingsError:
		return true
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, inner := range errs {
			if !onlyFindings(inner) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		inner := e.Unwrap()
		return inner != nil && onlyFindings(inner)
	}
	return false
}
