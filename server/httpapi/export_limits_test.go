package httpapi

import "github.com/go-chi/chi/v5"

// MountLimitsFixture mounts test handlers under /fixture behind the same
// middleware as /v1 (identify, rateLimit, then idempotent on public routes,
// requireApp and idempotent on protected ones), so limits_test.go can drive
// the middleware with handlers whose behaviour it controls.
func (s *Server) MountLimitsFixture(fn func(public, protected chi.Router)) {
	s.router.Route("/fixture", func(r chi.Router) {
		r.Use(s.identify, s.rateLimit)
		fn(r.With(s.idempotent), r.With(s.requireApp, s.idempotent))
	})
}
