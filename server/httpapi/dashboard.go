package httpapi

import (
	"context"
	"net/http"
)

// The dashboard (server/dashboard) runs its forms that move money or create
// something through the API's own idempotency layer, so that a double
// click is one action exactly as a retried API call is.

type idempotencyScopeKey struct{}

// WithIdempotencyScope names the idempotency scope of a request
// authenticated by other means than a bearer key (a dashboard session):
// "app:<app id>" (the scope the app's API calls use) or "admin".
func WithIdempotencyScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, idempotencyScopeKey{}, scope)
}

// Idempotent is the API's idempotency middleware (the Idempotency-Key
// header of a POST), for handlers mounted outside /v1.
func (s *Server) Idempotent(next http.Handler) http.Handler { return s.idempotent(next) }
