package httpapi

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/xpromo/xpromo/server/apperr"
)

// Authenticator resolves an API key to the app it belongs to. It answers an
// *apperr.Error with code unauthorized for an unknown, revoked or expired key.
type Authenticator interface {
	Authenticate(ctx context.Context, apiKey string) (appID string, err error)
}

type callerKey struct{}

// caller is who is making a request, as far as authentication could tell.
type caller struct {
	appID   string // "" when no valid key was presented
	authErr error  // why the presented key was refused, if one was
}

// identify reads the bearer key, if any, and records the app it belongs to.
// It never refuses a request itself: the rate limiter must see every request
// (keyed by app when the key is valid, else by IP), and requireApp refuses
// protected routes afterwards.
func (s *Server) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c caller
		if h := r.Header.Get("Authorization"); h != "" {
			key, ok := bearer(h)
			if !ok {
				c.authErr = apperr.New(apperr.Unauthorized, "the Authorization header must be `Bearer <API_KEY>`")
			} else if c.appID, c.authErr = s.services.Auth.Authenticate(r.Context(), key); c.authErr != nil {
				c.appID = ""
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

func bearer(header string) (string, bool) {
	scheme, key, ok := strings.Cut(header, " ")
	key = strings.TrimSpace(key)
	return key, ok && strings.EqualFold(scheme, "Bearer") && key != ""
}

// requireApp refuses a request without a valid API key: 401 unauthorized with
// WWW-Authenticate: Bearer.
func (s *Server) requireApp(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(callerKey{}).(caller)
		if c.appID != "" {
			next.ServeHTTP(w, r)
			return
		}
		err := c.authErr
		challenge := `Bearer realm="xpromo"`
		if err == nil {
			err = apperr.New(apperr.Unauthorized, "this endpoint needs `Authorization: Bearer <API_KEY>`; POST /v1/apps issues a key")
		} else {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		s.writeErr(w, r, err)
	})
}

// callerApp returns the app id of the authenticated caller ("" on public routes).
func callerApp(ctx context.Context) string {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c.appID
}

// ownApp returns the path's app id when it is the caller's own app, and
// not_found otherwise: another app's id answers exactly as a missing one
// does, so ids cannot be probed.
func ownApp(r *http.Request, pathAppID string) (string, error) {
	if id := callerApp(r.Context()); id != "" && id == pathAppID {
		return id, nil
	}
	// The message does not echo the id: both cases must answer the same body.
	return "", apperr.New(apperr.NotFound, "app not found")
}

// requireAdmin guards the operators' surface with the configured admin token.
// With no token configured the admin surface is closed, and says so (403
// admin_api_disabled, with how to enable it) rather than answering 401 as if
// the caller's token were wrong.
func (s *Server) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := s.services.AdminToken
		if token == "" {
			s.writeErr(w, r, apperr.New(apperr.AdminAPIDisabled,
				"the admin API is off on this server: restart xpromo-server with --admin-token or XPROMO_ADMIN_TOKEN set to enable it"))
			return
		}
		key, ok := bearer(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(key), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="xpromo-admin"`)
			s.writeErr(w, r, apperr.New(apperr.Unauthorized, "the admin surface needs `Authorization: Bearer <admin token>`"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
