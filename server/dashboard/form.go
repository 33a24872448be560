package dashboard

import (
	"bytes"
	"io"
	"net/http"
	"net/url"

	"github.com/xpromo/xpromo/server/dashboard/session"
	"github.com/xpromo/xpromo/server/httpapi"
)

// idempotentForm runs a form's POST through the API's idempotency layer
// with the form's hidden idempotency_key (drawn when the form was
// rendered), in the scope the signed-in app's API calls use: a double
// click, or a reload that resends the form, replays the first answer (the
// same redirect) instead of acting twice. The parsed form is left in
// r.PostForm for the handler.
func (d *Dashboard) idempotentForm(next http.Handler) http.Handler {
	keyed := d.cfg.API.Idempotent(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			d.renderError(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		next.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFormBytes))
		if err != nil {
			d.renderError(w, r, http.StatusRequestEntityTooLarge, "The form is too large.")
			return
		}
		form, err := url.ParseQuery(string(body))
		key := form.Get("idempotency_key")
		if err != nil || key == "" {
			d.renderError(w, r, http.StatusBadRequest, "The form is missing its idempotency key: reload the page and send it again.")
			return
		}
		s, _ := sessionFrom(r)
		scope := "admin"
		if s.Role == session.RoleApp {
			scope = "app:" + s.AppID
		}
		r = r.WithContext(httpapi.WithIdempotencyScope(r.Context(), scope))
		r.Header.Set("Idempotency-Key", key)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		keyed.ServeHTTP(w, r)
	})
}
