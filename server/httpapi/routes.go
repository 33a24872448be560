package httpapi

import (
	"github.com/go-chi/chi/v5"
)

// MountAPI mounts the REST API v1 with the given services. The middleware
// order is deliberate: take the client's address from a trusted proxy's
// X-Forwarded-For (realIP; no-op without trusted proxies), identify the
// caller (never refusing), rate-limit every
// request (per key when the key is valid, per IP otherwise, so 401s are
// limited too); then, once routed, apply the input policy (input: it needs
// the operation, and must refuse a body before idempotent reads it), refuse
// unauthenticated calls to protected routes, and make POSTs idempotent.
func (s *Server) MountAPI(svc Services) {
	s.services = svc
	documented() // read openapi.json now: a document the policy cannot read stops the server at start
	s.router.Route("/v1", func(r chi.Router) {
		r.Use(s.realIP, s.identify, s.rateLimit)
		public := r.With(s.input, s.idempotent)
		protected := r.With(s.input, s.requireApp, s.idempotent)
		admin := r.With(s.input, s.requireAdmin, s.idempotent)

		s.mountMeta(public)
		s.mountApps(public, protected, admin)
		s.mountMarket(public, protected, admin)
		s.mountStats(protected)
		s.mountMoney(public, protected, admin)
		s.mountSDK(public, protected, admin)
		s.mountWebhooks(public, protected, admin)
		s.mountEarnMode(protected)
		s.mountComplaints(protected, admin)
		s.mountGate(public, protected)
		s.mountLists(protected, admin)
		s.mountDashboard(protected)
	})
}
