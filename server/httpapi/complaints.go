package httpapi

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/cursor"
)

// mountComplaints: an app files and lists its complaints; operators list and
// resolve them (docs/apps.md, "Complaints").
func (s *Server) mountComplaints(protected, admin chi.Router) {
	protected.Post("/apps/{app_id}/complaints", s.fileComplaint)
	protected.Get("/apps/{app_id}/complaints", s.myComplaints)
	admin.Get("/admin/complaints", s.adminComplaints)
	admin.Post("/admin/complaints/{complaint_id}/resolve", s.resolveComplaint)
}

func (s *Server) fileComplaint(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var req xpromo.CreateComplaintRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	c, err := s.services.Complaints.File(r.Context(), appID, complaints.FileParams{AppID: req.AppID, Reason: string(req.Reason), Detail: req.Detail})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, complaint(c))
}

func (s *Server) myComplaints(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	limit, err := complaintLimit(r)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	cs, err := s.services.Complaints.Mine(r.Context(), appID, limit)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, complaintPage(cs))
}

func (s *Server) adminComplaints(w http.ResponseWriter, r *http.Request) {
	limit, err := complaintLimit(r)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var after *cursor.Position
	if q := r.URL.Query(); q.Has("cursor") {
		p, err := cursor.Decode(q.Get("cursor"))
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		after = &p
	}
	cs, next, err := s.services.Complaints.List(r.Context(), r.URL.Query().Get("status"), after, limit)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page := complaintPage(cs)
	page.NextCursor = optCursor(next)
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) resolveComplaint(w http.ResponseWriter, r *http.Request) {
	var req xpromo.ResolveComplaintRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	c, err := s.services.Complaints.Resolve(r.Context(), chi.URLParam(r, "complaint_id"), string(req.Resolution), req.Note)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, complaint(c))
}

func complaintLimit(r *http.Request) (int, error) {
	q := r.URL.Query()
	if !q.Has("limit") {
		return complaints.DefaultLimit, nil
	}
	n, err := strconv.Atoi(q.Get("limit"))
	if err != nil {
		e := apperr.New(apperr.InvalidLimit, "limit must be an integer from 1 to %d", complaints.MaxLimit)
		e.Field = "limit"
		return 0, e
	}
	return n, nil
}

func complaint(c complaints.Complaint) xpromo.Complaint {
	out := xpromo.Complaint{
		ComplaintID: c.ID, ReporterAppID: c.ReporterID, AppID: c.AppID, Reason: xpromo.ComplaintReason(c.Reason),
		Detail: c.Detail, Status: xpromo.ComplaintStatus(c.Status), CreatedAt: c.CreatedAt, ResolvedAt: c.ResolvedAt,
	}
	if c.Note != "" {
		note := c.Note
		out.ResolutionNote = &note
	}
	return out
}

func complaintPage(cs []complaints.Complaint) xpromo.ComplaintPage {
	p := xpromo.ComplaintPage{Complaints: make([]xpromo.Complaint, len(cs))}
	for i, c := range cs {
		p.Complaints[i] = complaint(c)
	}
	return p
}
