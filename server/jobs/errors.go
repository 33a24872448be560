package jobs

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Error is a handler's typed failure: a stable Code (lowercase, e.g.
// "gate_rdap_unavailable") and a Message the app's owner may read, both
// recorded on the job (last_error) and shown by GET /v1/apps/{app_id}/jobs/{job_id}.
//
// A transient error is retried on the runner's backoff schedule (or after
// RetryAfter, when the counterpart said how long to wait and that is
// longer); a permanent one fails the job at once.
//
// An error that is not an *Error (a bug, a database failure) counts as
// transient with code CodeError; its text goes to the log, not to the app's
// owner.
type Error struct {
	Code       string
	Message    string
	Permanent  bool
	RetryAfter time.Duration
	Err        error // the cause, for the log and errors.Is; never shown
}

func (e *Error) Error() string {
	kind := "transient"
	if e.Permanent {
		kind = "permanent"
	}
	if e.Err != nil {
		return fmt.Sprintf("%s %s: %s: %v", kind, e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s %s: %s", kind, e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Transient returns an error that retries the job later.
func Transient(code, format string, args ...any) *Error {
	return &Error{Code: mustCode(code), Message: fmt.Sprintf(format, args...)}
}

// Permanent returns an error that fails the job now.
func Permanent(code, format string, args ...any) *Error {
	return &Error{Code: mustCode(code), Message: fmt.Sprintf(format, args...), Permanent: true}
}

// Codes the runner itself records (docs/apps.md, "Jobs").
const (
	// CodeError: the handler or its outcome failed in a way it did not
	// classify (retried).
	CodeError = "job_error"
	// CodeTimeout: the handler ran past its kind's time budget (retried).
	CodeTimeout = "job_timeout"
	// CodeLeaseExpired: the job's runner stopped (a crash) on its last
	// allowed attempt, so it is failed rather than claimed again.
	CodeLeaseExpired = "job_lease_expired"
)

// MaxMessage is the longest message recorded; longer ones are cut.
const MaxMessage = 500

var codePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

func mustCode(code string) string {
	if !codePattern.MatchString(code) {
		panic(fmt.Sprintf("jobs: error code %q is not a lowercase code of at most 64 characters", code))
	}
	return code
}

// classify turns what a run returned into the error recorded on the job.
func classify(err error, timedOut bool) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case timedOut:
		return &Error{Code: CodeTimeout, Message: "the job ran out of its time budget; it will be retried", Err: err}
	default:
		return &Error{Code: CodeError, Message: "the job failed unexpectedly; it will be retried", Err: err}
	}
}

// cut shortens s to at most MaxMessage bytes on a rune boundary.
func cut(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	for i := MaxMessage; i > 0; i-- {
		if s[i]&0xC0 != 0x80 { // not a continuation byte
			return s[:i]
		}
	}
	return ""
}
