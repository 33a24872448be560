package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// DefaultMaxBodyBytes bounds the body Middleware reads when the Verifier
// sets no MaxBodyBytes. xpromo's event payloads are a few KiB.
const DefaultMaxBodyBytes = 1 << 20

// Middleware verifies each request before next sees it. It reads the whole
// body (at most MaxBodyBytes), verifies it, and on success hands next the
// request with the same bytes as its body. On failure next is not called
// and the answer is a JSON {"error":{"code","message"}} with the Error's
// code and status 400 for a request that is not a well-formed webhook, 413
// for a body over the bound, 401 for one that fails the check (bad
// signature, timestamp outside the tolerance).
//
// A verified request may still be a redelivery of an event next has already
// handled: dedupe on the webhook-id header.
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	limit := v.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, limit))
				return
			}
			writeError(w, http.StatusBadRequest, fmt.Errorf("%w: %v", ErrBodyUnreadable, err))
			return
		}
		if err := v.Verify(r.Header, body); err != nil {
			status := http.StatusUnauthorized
			var we *Error
			if errors.As(err, &we) && we.Malformed {
				status = http.StatusBadRequest
			}
			writeError(w, status, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		next.ServeHTTP(w, r)
	})
}

func writeError(w http.ResponseWriter, status int, err error) {
	code := "webhook_rejected"
	var we *Error
	if errors.As(err, &we) {
		code = we.Code
	}
	var out struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	out.Error.Code, out.Error.Message = code, err.Error()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(out)
}
