package app

import (
	"errors"
	"fmt"
)

// FieldError is bad input: it names the field and the value, says why, and
// nothing was changed.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

func (e *FieldError) Error() string {
	switch v := e.Value.(type) {
	case nil:
		return fmt.Sprintf("%s: %s", e.Field, e.Reason)
	case string:
		return fmt.Sprintf("%s %q: %s", e.Field, v, e.Reason)
	default:
		return fmt.Sprintf("%s %v: %s", e.Field, v, e.Reason)
	}
}

func badField(field string, value any, format string, args ...any) error {
	return &FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// RefusedError is a run that was refused by policy or because no isolation
// could be applied. Nothing ran.
type RefusedError struct {
	Reason string
	// Isolation, when set, is what the run's record says after
	// "refused: " in place of the whole reason (shell guard: GROUP).
	Isolation string
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// NotFoundError is an unknown id.
type NotFoundError struct {
	Kind string
	ID   string
	// Where, when set, names a thing by a path rather than an id: "no
	// file "x" in the sandbox".
	Where string
	// CrossTenant is true when the id exists but is another tenant's:
	// the answer is the same as for an unknown id (ids are not
	// confirmed), and the faces record a security event.
	CrossTenant bool
}

func (e *NotFoundError) Error() string {
	if e.Where != "" {
		return fmt.Sprintf("no %s %q %s", e.Kind, e.ID, e.Where)
	}
	return fmt.Sprintf("no %s with id %q", e.Kind, e.ID)
}

// ConflictError is a request that cannot be done in the current state.
type ConflictError struct {
	Reason string
}

func (e *ConflictError) Error() string { return e.Reason }

// IsRefused reports whether err is a refusal by policy or missing isolation.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}
