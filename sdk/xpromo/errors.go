package xpromo

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrorResponse is the body of every error response (except the 402 x402
// challenge of top-up, which is an X402Challenge).
type ErrorResponse struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is the `error` object of an ErrorResponse.
type ErrorBody struct {
	// Code is stable across versions; build on it, never on Message.
	Code string `json:"code"`
	// Message is human-readable and may change between versions.
	Message string `json:"message"`
	// RetryAfter is when the request may succeed if retried, or null. For
	// gate_domain_too_young it is the date from which the domain is
	// eligible; for rate_limited, when the limit resets.
	RetryAfter *time.Time `json:"retry_after"`
}

// Stable error codes named by the API document and the product decisions.
// The server's catalogue (docs/errors.md) is the complete list with each
// code's status and condition; clients must tolerate codes not listed here.
const (
	CodeUnauthorized         = "unauthorized"           // 401: missing or bad API key
	CodeNotFound             = "not_found"              // 404: missing, or another app's resource
	CodeRateLimited          = "rate_limited"           // 429: retry_after says when
	CodeIdempotencyKeyInUse  = "idempotency_key_in_use" // 409: same key still being processed
	CodeIdempotencyKeyReused = "idempotency_key_reused" // 422: same key, different body
	CodeBelowMinimum         = "below_minimum"          // amount below a documented minimum
	CodeBidBelowFloor        = "bid_below_floor"        // 422: max_bid_cents under the floor
	CodeInvalidPlatform      = "invalid_platform"       // 422: platform not mac or win
	CodePayoutAccountMissing = "payout_account_missing" // 409: no connected account
	CodePayoutInProgress     = "payout_in_progress"     // 409: a payout is already running
	CodeGateDomainTooYoung   = "gate_domain_too_young"  // retry_after: eligibility date
	CodeGateUnsignedBinary   = "gate_unsigned_binary"
	CodeInternal             = "internal"    // 500
	CodeUnavailable          = "unavailable" // 503
)

// Error is a non-2xx answer of the API as a Go error. The REST client
// returns it (as *Error) for every error response carrying an Error body.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable error code (ErrorBody.Code).
	Code string
	// Message is the human-readable message (ErrorBody.Message).
	Message string
	// RetryAfter is ErrorBody.RetryAfter (nil when null).
	RetryAfter *time.Time
	// RequestID is the server's request id from the X-Request-Id response
	// header, when present; quote it when reporting a problem.
	RequestID string
}

// NewError builds an *Error from an HTTP status, an error body and a request id.
func NewError(status int, body ErrorBody, requestID string) *Error {
	return &Error{
		Status:     status,
		Code:       body.Code,
		Message:    body.Message,
		RetryAfter: body.RetryAfter,
		RequestID:  requestID,
	}
}

// Error implements error: "xpromo: 404 not_found: app not found (request abc)".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "xpromo: %d %s", e.Status, e.Code)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter != nil {
		b.WriteString(" (retry after ")
		b.WriteString(e.RetryAfter.UTC().Format(time.RFC3339))
		b.WriteString(")")
	}
	if e.RequestID != "" {
		b.WriteString(" (request ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	return b.String()
}

// Body returns the error as the wire ErrorBody.
func (e *Error) Body() ErrorBody {
	return ErrorBody{Code: e.Code, Message: e.Message, RetryAfter: e.RetryAfter}
}

// ErrorCode returns the stable code of err when it is (or wraps) an *Error,
// and "" otherwise.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// IsCode reports whether err is (or wraps) an *Error with the given code.
func IsCode(err error, code string) bool {
	return code != "" && ErrorCode(err) == code
}
