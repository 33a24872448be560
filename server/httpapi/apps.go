package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
)

// mountApps: POST /apps, the app's own record (GET and PATCH
// /apps/{app_id}), GET /apps/{app_id}/score, key rotation, job lookup, and
// the admin surface for app status.
func (s *Server) mountApps(public, protected, admin chi.Router) {
	public.Post("/apps", s.registerApp)
	protected.Get("/apps/{app_id}", s.getApp)
	protected.Patch("/apps/{app_id}", s.updateApp)
	protected.Get("/apps/{app_id}/score", s.getScore)
	if s.services.Lifecycle != nil {
		protected.Get("/apps/{app_id}/thresholds", s.getThresholds)
	}
	protected.Get("/apps/{app_id}/jobs/{job_id}", s.getJob)
	protected.Post("/apps/{app_id}/keys/rotate", s.rotateKey)

	for _, a := range apps.Actions {
		admin.Post("/admin/apps/{app_id}/"+string(a), s.adminAct(a))
	}
	admin.Get("/admin/apps/{app_id}", s.adminGetApp)
	admin.Get("/admin/audit", s.adminAudit)
}

func (s *Server) registerApp(w http.ResponseWriter, r *http.Request) {
	var req xpromo.RegisterAppRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	app, key, job, err := s.services.Apps.Register(r.Context(), apps.RegisterParams{
		Name: req.Name, Platform: string(req.Platform), BundleID: req.BundleID, Domain: req.Domain,
		DownloadURL: req.DownloadURL, ContactEmail: req.ContactEmail, Category: req.Category, AppcastURL: req.AppcastURL,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, xpromo.RegisterAppResponse{AppID: app.ID, APIKey: key, Status: app.Status, ScoringJobID: job.ID})
}

func (s *Server) getApp(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	a, err := s.services.Apps.App(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wireApp(a))
}

// updateAppRequest is PATCH /apps/{app_id}'s body as read: raw values, so
// that an absent appcast_url (missing_field) differs from null (clear it),
// and so that a registration field is refused by name
// (field_not_changeable) rather than as an unknown one. Anything else is
// unknown_field.
type updateAppRequest struct {
	AppcastURL json.RawMessage `json:"appcast_url"`

	Name         json.RawMessage `json:"name"`
	Platform     json.RawMessage `json:"platform"`
	BundleID     json.RawMessage `json:"bundle_id"`
	Domain       json.RawMessage `json:"domain"`
	DownloadURL  json.RawMessage `json:"download_url"`
	ContactEmail json.RawMessage `json:"contact_email"`
	Category     json.RawMessage `json:"category"`
}

// fixed returns the first registration field the body gives, in the order
// of apps.FixedFields; "" when none.
func (q *updateAppRequest) fixed() string {
	given := map[string]json.RawMessage{"name": q.Name, "platform": q.Platform, "bundle_id": q.BundleID, "domain": q.Domain,
		"download_url": q.DownloadURL, "contact_email": q.ContactEmail, "category": q.Category}
	for _, f := range apps.FixedFields {
		if given[f] != nil {
			return f
		}
	}
	return ""
}

// updateApp changes the app's appcast URL. No body at all is read as {}:
// nothing to change is missing_field either way.
func (s *Server) updateApp(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var req updateAppRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &req); err != nil {
			s.writeErr(w, r, err)
			return
		}
	}
	if f := req.fixed(); f != "" {
		s.writeErr(w, r, apps.NotChangeable(f))
		return
	}
	var url *string
	switch {
	case req.AppcastURL == nil:
		e := apperr.New(apperr.MissingField, "appcast_url is required: the new URL, or null to remove it")
		e.Field = "appcast_url"
		s.writeErr(w, r, e)
		return
	case string(req.AppcastURL) != "null":
		url = new(string)
		if json.Unmarshal(req.AppcastURL, url) != nil {
			e := apperr.New(apperr.InvalidType, "field \"appcast_url\" must be a string or null")
			e.Field = "appcast_url"
			s.writeErr(w, r, e)
			return
		}
	}
	a, job, err := s.services.Apps.UpdateAppcastURL(r.Context(), appID, url)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := xpromo.AppUpdate{App: wireApp(a)}
	if job != nil {
		out.ScoringJobID = &job.ID
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getScore(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	score, err := s.services.Apps.Score(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, score)
}

// getThresholds answers how close the app is to each lifecycle threshold
// (docs/apps.md "Thresholds").
func (s *Server) getThresholds(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	th, err := s.services.Lifecycle.Thresholds(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, th)
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	j, err := s.services.Apps.Job(r.Context(), appID, chi.URLParam(r, "job_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wireJob(j))
}

func (s *Server) rotateKey(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	key, expires, err := s.services.Apps.RotateKey(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, xpromo.KeyRotation{APIKey: key, PreviousKeyExpiresAt: expires})
}

// adminAct handles one operator action. The body is optional: none at all,
// or {"reason": "..."}.
func (s *Server) adminAct(action apps.Action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req xpromo.AdminActionRequest
		if r.ContentLength != 0 {
			if err := decodeJSON(w, r, &req); err != nil {
				s.writeErr(w, r, err)
				return
			}
		}
		view, err := s.services.Apps.Act(r.Context(), chi.URLParam(r, "app_id"), action, req.Reason)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, adminApp(view))
	}
}

func (s *Server) adminGetApp(w http.ResponseWriter, r *http.Request) {
	view, err := s.services.Apps.AppView(r.Context(), chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, adminApp(view))
}

func (s *Server) adminAudit(w http.ResponseWriter, r *http.Request) {
	q, err := apps.ParseAuditQuery(r.URL.Query())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	got, err := s.services.Apps.Audit(r.Context(), q)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page := xpromo.AuditPage{Entries: make([]xpromo.AuditEntry, len(got.Entries)), NextCursor: optCursor(got.Next)}
	for i, e := range got.Entries {
		page.Entries[i] = xpromo.AuditEntry{ID: e.ID, Actor: e.Actor, Action: e.Action, Subject: e.Subject, Detail: e.Detail, At: e.At}
	}
	writeJSON(w, http.StatusOK, page)
}

// wireApp is the app as its team reads it; adminApp adds the status
// history for operators.
func wireApp(a apps.App) xpromo.App {
	out := xpromo.App{
		AppID: a.ID, Name: a.Name, Platform: a.Platform, BundleID: a.BundleID, Domain: a.Domain,
		DownloadURL: a.DownloadURL, ContactEmail: a.ContactEmail, Status: a.Status, EarnMode: string(a.EarnMode),
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
	if a.Category != "" {
		out.Category = &a.Category
	}
	if a.AppcastURL != "" {
		out.AppcastURL = &a.AppcastURL
	}
	return out
}

func adminApp(v apps.AppView) xpromo.AdminApp {
	out := xpromo.AdminApp{App: wireApp(v.App), StatusHistory: make([]xpromo.StatusChange, len(v.History))}
	for i, c := range v.History {
		sc := xpromo.StatusChange{To: c.To, Reason: c.Reason, Actor: c.Actor, At: c.At}
		if c.From != "" {
			from := c.From
			sc.From = &from
		}
		out.StatusHistory[i] = sc
	}
	return out
}
