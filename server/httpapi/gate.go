package httpapi

import (
	"html/template"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/gate/contact"
)

// ContactVerifyPath is the public verification page the challenge email
// links to (with ?token=).
const ContactVerifyPath = "/v1/contact/verify"

// mountGate: the re-check, the contact challenge's code and resend, and the
// public verification page.
func (s *Server) mountGate(public, protected chi.Router) {
	protected.Post("/apps/{app_id}/gate/recheck", s.recheckGate)
	protected.Post("/apps/{app_id}/contact/verify", s.verifyContactCode)
	protected.Post("/apps/{app_id}/contact/resend", s.resendContact)
	// A GET has no side effect: mail scanners fetch links. The page's
	// button POSTs the token.
	public.Get("/contact/verify", s.contactVerifyPage)
	public.Post("/contact/verify", s.verifyContactToken)
}

func (s *Server) recheckGate(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	j, err := s.services.Gate.Recheck(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, wireJob(j))
}

func (s *Server) verifyContactCode(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var req xpromo.ContactVerifyRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if req.Code == "" {
		s.writeErr(w, r, fieldErr(apperr.MissingField, "code", "code is required: the 6-digit code from the challenge email"))
		return
	}
	v, err := s.services.Gate.VerifyCode(r.Context(), appID, req.Code)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.ContactVerification{Status: string(v.Status), VerifiedAt: v.VerifiedAt.UTC(), AttemptsLeft: v.AttemptsLeft})
}

func (s *Server) resendContact(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	email, expires, err := s.services.Gate.Resend(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, xpromo.ContactChallenge{Email: email, ExpiresAt: expires.UTC()})
}

func (s *Server) contactVerifyPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	// The button POSTs the token in the query, as the link carries it: the
	// POST takes no body.
	writeContactPage(w, contactPage{Ask: token != "", Action: ContactVerifyPath + "?" + url.Values{"token": {token}}.Encode()})
}

func (s *Server) verifyContactToken(w http.ResponseWriter, r *http.Request) {
	v, err := s.services.Gate.VerifyToken(r.Context(), r.URL.Query().Get("token"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeContactPage(w, contactPage{Done: true, Status: v.Status})
}

// wireJob is a job as the API shows it.
func wireJob(j apps.Job) xpromo.Job {
	job := xpromo.Job{JobID: j.ID, Kind: j.Kind, Status: j.Status, CreatedAt: j.CreatedAt, RunAfter: j.RunAfter, FinishedAt: j.FinishedAt, Attempts: j.Attempts}
	if j.Result != nil {
		job.Result = &j.Result
	}
	if j.LastError != "" {
		job.LastError = &xpromo.JobError{Code: j.LastError, Message: j.LastErrorMessage}
	}
	return job
}

type contactPage struct {
	Ask    bool // show the confirm button
	Action string
	Done   bool // a POST answered
	Status contact.Status
}

var contactPageTemplate = template.Must(template.New("contact").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>xpromo: confirm your contact address</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; color: #222; }
button { font-size: 1.1rem; padding: .6rem 1.6rem; cursor: pointer; }
</style>
</head>
<body>
<h1>Confirm your contact address</h1>
{{if .Done}}{{if eq .Status "ok"}}<p><strong>Confirmed.</strong> The vetting gate now checks the app again; its score shows the outcome.</p>
{{else if eq .Status "used"}}<p>This link was already used: the address is confirmed.</p>
{{else if eq .Status "expired"}}<p>This link expired, or a newer email replaced it. Use the newest email, or ask for a new one (<code>POST /v1/apps/{app_id}/contact/resend</code>).</p>
{{else}}<p>This link is not valid. Copy the whole link from the email, or enter the code from the email instead.</p>
{{end}}{{else if .Ask}}<p>An app registered on xpromo named this address as its contact. Confirm that it reaches the people behind the app:</p>
<form method="post" action="{{.Action}}"><button type="submit">Confirm this address</button></form>
<p>If you did not register an app, close this page: nothing happens unless you confirm.</p>
{{else}}<p>This link is incomplete: copy the whole link from the email.</p>
{{end}}</body>
</html>
`))

func writeContactPage(w http.ResponseWriter, p contactPage) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(http.StatusOK)
	_ = contactPageTemplate.Execute(w, p)
}
