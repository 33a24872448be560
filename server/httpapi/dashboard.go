package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
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

// SignInLinks mints the dashboard's single-use sign-in links
// (server/dashboard/session).
type SignInLinks interface {
	MintLink(ctx context.Context, appID string) (token string, expires time.Time, err error)
}

// SignInPath is where a sign-in link points, below the base URL.
const SignInPath = "/dashboard/sign-in?link="

func (s *Server) mountDashboard(protected chi.Router) {
	if s.services.SignInLinks != nil {
		protected.Post("/dashboard/sign-in-links", s.mintSignInLink)
	}
}

// mintSignInLink answers POST /v1/dashboard/sign-in-links: a link that
// signs a browser in to the caller's dashboard, once, within 5 minutes.
func (s *Server) mintSignInLink(w http.ResponseWriter, r *http.Request) {
	token, expires, err := s.services.SignInLinks.MintLink(r.Context(), callerApp(r.Context()))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}{s.publicURL(r, SignInPath+token), expires})
}
