package httpapi

import "github.com/go-chi/chi/v5"

// mountMarket: the rate card, campaigns, stats and network stats.
func (s *Server) mountMarket(public, protected, admin chi.Router) {}
