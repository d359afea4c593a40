// Package option is how a verb's action struct says which of its options is wrong without
// knowing how a caller sets it: by the field's name. `csi-olm` names the flag (each flag is
// annotated with the field it fills); a Go caller sees the field.
package option

import "fmt"

// Error is a problem with one option of an action struct.
type Error struct {
	// Field is the action struct's field, such as "BundleImage".
	Field string
	Err   error
}

// Errorf is an Error for field, with a message formatted as fmt.Errorf formats it.
func Errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Err: fmt.Errorf(format, args...)}
}

func (e *Error) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }
