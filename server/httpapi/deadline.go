package httpapi

import (
	"context"
	"net/http"
	"time"
)

// WithDeadline gives every request served by h a deadline of d
// (--request-timeout): the store stops waiting for a database that went away
// (a failover, a partition) and the request answers 503 unavailable with
// Retry-After (writeErr) instead of hanging until the kernel gives up on
// the connection. What must outlive the request (storing an idempotent
// answer) detaches from it. d <= 0 sets none.
func WithDeadline(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
