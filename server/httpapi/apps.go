package httpapi

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
)

// mountApps: POST /apps, GET /apps/{app_id}/score, key rotation, job lookup,
// and the admin surface for app status.
func (s *Server) mountApps(public, protected, admin chi.Router) {
	public.Post("/apps", s.registerApp)
	protected.Get("/apps/{app_id}/score", s.getScore)
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
	limit := apps.DefaultAuditLimit
	if q := r.URL.Query(); q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil {
			e := apperr.New(apperr.InvalidLimit, "limit must be an integer from 1 to %d", apps.MaxAuditLimit)
			e.Field = "limit"
			s.writeErr(w, r, e)
			return
		}
		limit = n
	}
	entries, err := s.services.Apps.Audit(r.Context(), limit)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page := xpromo.AuditPage{Entries: make([]xpromo.AuditEntry, len(entries))}
	for i, e := range entries {
		page.Entries[i] = xpromo.AuditEntry{ID: e.ID, Actor: e.Actor, Action: e.Action, Subject: e.Subject, Detail: e.Detail, At: e.At}
	}
	writeJSON(w, http.StatusOK, page)
}

func adminApp(v apps.AppView) xpromo.AdminApp {
	a := v.App
	out := xpromo.AdminApp{
		AppID: a.ID, Name: a.Name, Platform: a.Platform, BundleID: a.BundleID, Domain: a.Domain,
		DownloadURL: a.DownloadURL, ContactEmail: a.ContactEmail, Status: a.Status, EarnMode: string(a.EarnMode),
		CreatedAt: a.CreatedAt, StatusHistory: make([]xpromo.StatusChange, len(v.History)),
	}
	if a.Category != "" {
		out.Category = &a.Category
	}
	if a.AppcastURL != "" {
		out.AppcastURL = &a.AppcastURL
	}
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
