package httpapi

import "github.com/go-chi/chi/v5"

// mountApps: POST /apps, GET /apps/{app_id}/score, and the admin surface for
// app status.
func (s *Server) mountApps(public, protected, admin chi.Router) {}
