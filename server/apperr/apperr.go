// Package apperr is the server's one catalogue of error codes.
//
// Domain code returns *Error values carrying a stable Code; the HTTP layer maps
// the code to its status through the Catalogue, and docs/errors.md is checked
// against the Catalogue by a test, so code and documentation cannot disagree.
// Clients build on Code, never on Message.
package apperr

import (
	"errors"
	"fmt"
	"time"
)

// Error is an application error with a stable code.
type Error struct {
	Code       string
	Message    string
	RetryAfter *time.Time // when the caller may try again, if known
	Field      string     // the request field at fault, for validation errors
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New returns an error with the given catalogued code.
func New(code, format string, args ...any) *Error {
	if _, ok := catalogue[code]; !ok {
		panic("apperr: code not in catalogue: " + code)
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Code returns the stable code of err, or "internal" when err carries none.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries the given code.
func Is(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
