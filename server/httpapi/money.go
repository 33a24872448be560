package httpapi

import "github.com/go-chi/chi/v5"

// mountMoney: top-up (checkout and x402), the test checkout page, the ledger,
// payouts and /.well-known/x402.
func (s *Server) mountMoney(public, protected, admin chi.Router) {}
