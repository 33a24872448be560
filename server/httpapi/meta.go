package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/server/openapi"
)

// mountMeta: the integration guide with the protocol specification and its
// test vectors, and the OpenAPI document at the root.
func (s *Server) mountMeta(public chi.Router) {
	public.Get("/integration-guide", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write(s.services.Guide)
	})
	public.Get("/integration-guide/protocol.md", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write(s.services.GuideProtocol)
	})
	public.Get("/integration-guide/vectors.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.services.GuideVectors)
	})
	s.router.With(s.identify, s.rateLimit, s.input).Get("/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", openapi.ContentType)
		w.Write(openapi.Document)
	})
}
