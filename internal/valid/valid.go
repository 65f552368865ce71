// Package valid collects the field problems of a request body so that one
// answer lists them all (422 validation_failed with details).
package valid

import (
	"fmt"
	"strings"
)

// Problem is one field that failed validation.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Errors is a list of problems; its zero value is ready to use.
type Errors struct{ Problems []Problem }

// Add records a problem with a field.
func (e *Errors) Add(field, format string, args ...any) {
	e.Problems = append(e.Problems, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err answers nil when nothing was added, else the error carrying the problems.
func (e *Errors) Err() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return &Error{Problems: e.Problems}
}

// Error is a validation failure.
type Error struct{ Problems []Problem }

func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Message
	}
	return "validation failed: " + strings.Join(parts, "; ")
}

// One makes a validation error about a single field.
func One(field, format string, args ...any) error {
	var e Errors
	e.Add(field, format, args...)
	return e.Err()
}
