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
	// Status overrides the code's default status where the catalogue lists
	// the code under more than one (below_minimum: 422 on input, 409 on payout).
	Status int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New returns an error with the given catalogued code.
func New(code, format string, args ...any) *Error {
	if !Known(code) {
		panic("apperr: code not in catalogue: " + code)
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithStatus returns e answering status instead of its code's default; the
// catalogue must list the code under that status.
func (e *Error) WithStatus(status int) *Error {
	if !listed(e.Code, status) {
		panic(fmt.Sprintf("apperr: %s is not catalogued with status %d", e.Code, status))
	}
	e.Status = status
	return e
}

// HTTPStatus returns the status err answers with: its override, else its
// code's default status, else 500.
func HTTPStatus(err error) int {
	var e *Error
	if !errors.As(err, &e) {
		return 500
	}
	if e.Status != 0 {
		return e.Status
	}
	return Status(e.Code)
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
