// Package dashboard is the web dashboard for app teams and operators
// (docs/dashboard.md): server-rendered html/template pages under
// /dashboard/, with one CSS file and the vendored htmx and uPlot served from
// go:embed. Pages work without JavaScript; htmx and uPlot only enhance them.
//
// Handlers are thin: they read a form, call the same in-process domain
// services the REST API's handlers call (never HTTP to the server itself),
// and render a template. Every response carries a strict
// Content-Security-Policy; every non-GET request goes through the standard
// library's cross-origin protection, and no GET changes state.
package dashboard

import (
	"embed"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/server/httpapi"
)

//go:embed static
var staticFS embed.FS

// Prefix is where the dashboard is served.
const Prefix = "/dashboard"

// Config is what the dashboard needs: the REST API's server (its
// idempotency layer and clock) and services, the sessions, and the mode.
type Config struct {
	API      *httpapi.Server
	Services httpapi.Services
	Sessions *Sessions
	Mode     string // httpapi.ModeTest shows the test-mode banner on every page
	Logger   *slog.Logger
}

// Dashboard serves the pages.
type Dashboard struct {
	cfg   Config
	pages *pages
	log   *slog.Logger
}

// Mount serves the dashboard at /dashboard/ on the API's router, and makes
// GET / send a browser there (303); an API client asking for / keeps the
// API's JSON 404.
func Mount(cfg Config) *Dashboard {
	d := &Dashboard{cfg: cfg, pages: mustParsePages(), log: cfg.Logger}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	root := cfg.API.Router()
	var fallback http.Handler = http.NotFoundHandler()
	if m, ok := root.(interface{ NotFoundHandler() http.HandlerFunc }); ok {
		fallback = m.NotFoundHandler()
	}
	root.Get("/", func(w http.ResponseWriter, r *http.Request) {
		if wantsHTML(r) {
			http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
			return
		}
		fallback.ServeHTTP(w, r)
	})
	root.Mount(Prefix, d.Handler())
	return d
}

// wantsHTML tells a browser's navigation from an API client: browsers send
// Accept: text/html first; curl and the SDKs do not.
func wantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && (mt == "text/html" || mt == "application/xhtml+xml") {
			return true
		}
	}
	return false
}

// Handler is the dashboard, to be mounted at Prefix: its routes are
// relative to it, its links absolute.
func (d *Dashboard) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == Prefix { // relative links need the slash
				http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	r.NotFound(d.notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		d.renderError(w, r, http.StatusMethodNotAllowed, "This address does not take that method.")
	})
	static, _ := fs.Sub(staticFS, "static")
	r.Handle("/static/*", http.StripPrefix(Prefix+"/static/", immutable(http.FileServerFS(static))))
	d.routes(r)
	// Cross-origin protection refuses a non-safe request (POST) another
	// site's page sends (Sec-Fetch-Site, else Origin against Host) with a
	// 403; it needs no token in the forms. GET and HEAD pass: they change
	// nothing.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.renderError(w, r, http.StatusForbidden, "This form was sent from another site, so it was refused. Open the dashboard and send it from there.")
	}))
	return securityHeaders(cop.Handler(r))
}

// ContentSecurityPolicy is sent with every dashboard response: scripts,
// styles, images and requests only from the server itself, no inline script
// or style, no framing, forms only to the server.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		// no-referrer: a sign-in link's token is in its URL, and must not
		// leave in a Referer to wherever the page links.
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, Prefix+"/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// immutable lets browsers cache the embedded files for a day: they change
// only with a new server binary.
func immutable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		next.ServeHTTP(w, r)
	})
}

func (d *Dashboard) now() time.Time { return d.cfg.API.Now() }

func (d *Dashboard) testMode() bool { return d.cfg.Mode == httpapi.ModeTest }

func (d *Dashboard) notFound(w http.ResponseWriter, r *http.Request) {
	d.renderError(w, r, http.StatusNotFound, "There is nothing at this address, or it is not yours to see.")
}
