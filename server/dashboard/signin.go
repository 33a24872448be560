package dashboard

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/dashboard/session"
)

// Sessions is the sign-in service the dashboard runs on.
type Sessions = session.Service

// Cookie names: the __Host- prefix makes the browser refuse the cookie
// unless it is Secure, host-only and Path=/, which only https allows; on
// plain http (a developer's http://127.0.0.1) the unprefixed name is used.
const (
	cookieSecure = "__Host-xpromo_session"
	cookiePlain  = "xpromo_session"
)

// maxSecretBytes bounds what the sign-in form reads of a pasted key or
// link token (both are far shorter).
const maxSecretBytes = 256

// maxFormBytes bounds every dashboard form body.
const maxFormBytes = 64 << 10

// https tells whether the browser reached the server over https: directly,
// or through a proxy in front of a server whose base URL is https.
func (d *Dashboard) https(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(d.cfg.Services.BaseURL, "https://")
}

func (d *Dashboard) cookieName(r *http.Request) string {
	if d.https(r) {
		return cookieSecure
	}
	return cookiePlain
}

func (d *Dashboard) setSessionCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{Name: d.cookieName(r), Value: token, Path: "/", HttpOnly: true,
		Secure: d.https(r), SameSite: http.SameSiteLaxMode, MaxAge: int(session.AbsoluteLife / time.Second)})
}

func (d *Dashboard) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: d.cookieName(r), Value: "", Path: "/", HttpOnly: true,
		Secure: d.https(r), SameSite: http.SameSiteLaxMode, MaxAge: -1})
}

type sessionKey struct{}

func sessionFrom(r *http.Request) (session.Session, bool) {
	s, ok := r.Context().Value(sessionKey{}).(session.Session)
	return s, ok
}

func (d *Dashboard) sessionToken(r *http.Request) string {
	c, err := r.Cookie(d.cookieName(r))
	if err != nil || len(c.Value) > maxSecretBytes {
		return ""
	}
	return c.Value
}

// withSession resumes the browser's session, if it has one, into the
// request's context. It never refuses: requireRole does.
func (d *Dashboard) withSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := d.sessionToken(r)
		if token == "" {
			next.ServeHTTP(w, r)
			return
		}
		s, err := d.cfg.Sessions.Resume(r.Context(), token)
		switch {
		case errors.Is(err, session.ErrNoSession):
			d.clearSessionCookie(w, r)
		case err != nil:
			d.renderError(w, r, http.StatusServiceUnavailable, "The dashboard could not read your session; try again in a moment.")
			return
		default:
			r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
		}
		next.ServeHTTP(w, r)
	})
}

// requireRole sends a browser without a session of role to the sign-in
// page (a GET) or refuses the request (403, anything else).
func (d *Dashboard) requireRole(role string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s, ok := sessionFrom(r)
			if ok && s.Role == role {
				next.ServeHTTP(w, r)
				return
			}
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
				return
			}
			d.renderError(w, r, http.StatusForbidden, "Sign in first.")
		})
	}
}

// home sends a browser to its role's first page.
func (d *Dashboard) home(w http.ResponseWriter, r *http.Request) {
	s, ok := sessionFrom(r)
	switch {
	case !ok:
		http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
	case s.Role == session.RoleOperator:
		http.Redirect(w, r, Prefix+"/operator/review", http.StatusSeeOther)
	default:
		d.overview(w, r)
	}
}

type signInData struct {
	LinkToken string // set: the page asks to confirm the link's sign-in
	AdminOn   bool
}

// signInPage is the form that takes a pasted key; with ?link= it is the
// confirmation of a sign-in link. The link is used by the POST the
// confirmation sends, not by this GET: a GET changes nothing, and a link
// previewer or prefetcher that follows the URL cannot burn the link.
func (d *Dashboard) signInPage(w http.ResponseWriter, r *http.Request) {
	link := r.URL.Query().Get("link")
	if len(link) > maxSecretBytes {
		link = ""
	}
	d.render(w, r, http.StatusOK, "signin", view{Title: "Sign in", Data: signInData{LinkToken: link, AdminOn: d.cfg.Services.AdminToken != ""}})
}

func (d *Dashboard) signInError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusUnauthorized, "That is neither an API key of an app on this server nor its admin token."
	var ae *apperr.Error
	if errors.As(err, &ae) && ae.Code == apperr.SignInLinkInvalid {
		msg = "This sign-in link was used already, has expired (links last 5 minutes) or never existed. Mint a new one with `xpromo dashboard`, or paste your API key."
	} else if err != nil && !errors.As(err, &ae) {
		status, msg = http.StatusServiceUnavailable, "Signing in failed on the server; try again in a moment."
		d.log.ErrorContext(r.Context(), "dashboard: sign-in failed", "err", err)
	}
	d.render(w, r, status, "signin", view{Title: "Sign in", Error: msg, Data: signInData{AdminOn: d.cfg.Services.AdminToken != ""}})
}

// signIn takes a pasted API key (an app session) or the admin token (an
// operator session), or a sign-in link's token (link).
func (d *Dashboard) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		d.renderError(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	var (
		token string
		err   error
	)
	if link := r.PostForm.Get("link"); link != "" {
		if len(link) > maxSecretBytes {
			link = "-" // no such token
		}
		token, _, err = d.cfg.Sessions.RedeemLink(r.Context(), link)
	} else {
		token, err = d.signInWithKey(r.Context(), strings.TrimSpace(r.PostForm.Get("key")))
	}
	if err != nil {
		d.signInError(w, r, err)
		return
	}
	// A session that was open in this browser ends: one browser, one
	// session.
	if old := d.sessionToken(r); old != "" {
		_ = d.cfg.Sessions.End(r.Context(), old)
	}
	d.setSessionCookie(w, r, token)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

func (d *Dashboard) signInWithKey(ctx context.Context, key string) (string, error) {
	if key == "" || len(key) > maxSecretBytes {
		return "", apperr.New(apperr.SignInFailed, "no key")
	}
	if admin := d.cfg.Services.AdminToken; admin != "" && subtle.ConstantTimeCompare([]byte(key), []byte(admin)) == 1 {
		token, _, err := d.cfg.Sessions.Start(ctx, session.RoleOperator, "")
		return token, err
	}
	appID, err := d.cfg.Services.Auth.Authenticate(ctx, key)
	if err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return "", apperr.New(apperr.SignInFailed, "unknown key")
		}
		return "", err
	}
	token, _, err := d.cfg.Sessions.Start(ctx, session.RoleApp, appID)
	return token, err
}

// signOut ends the session and its cookie.
func (d *Dashboard) signOut(w http.ResponseWriter, r *http.Request) {
	if token := d.sessionToken(r); token != "" {
		if err := d.cfg.Sessions.End(r.Context(), token); err != nil {
			d.renderError(w, r, http.StatusServiceUnavailable, "Signing out failed on the server; try again.")
			return
		}
	}
	d.clearSessionCookie(w, r)
	http.Redirect(w, r, Prefix+"/sign-in?done=signedout", http.StatusSeeOther)
}
