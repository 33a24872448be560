package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/webhooks"
)

// mountWebhooks: an app's webhook endpoints, their attempts and
// redelivery, and the events API (docs/webhooks.md).
func (s *Server) mountWebhooks(_, protected, _ chi.Router) {
	protected.Post("/apps/{app_id}/webhook-endpoints", s.createWebhookEndpoint)
	protected.Get("/apps/{app_id}/webhook-endpoints", s.listWebhookEndpoints)
	protected.Get("/apps/{app_id}/webhook-endpoints/{endpoint_id}", s.getWebhookEndpoint)
	protected.Patch("/apps/{app_id}/webhook-endpoints/{endpoint_id}", s.updateWebhookEndpoint)
	protected.Delete("/apps/{app_id}/webhook-endpoints/{endpoint_id}", s.deleteWebhookEndpoint)
	protected.Post("/apps/{app_id}/webhook-endpoints/{endpoint_id}/rotate-secret", s.rotateWebhookSecret)
	protected.Get("/apps/{app_id}/webhook-endpoints/{endpoint_id}/attempts", s.listWebhookAttempts)
	protected.Post("/apps/{app_id}/webhook-endpoints/{endpoint_id}/redeliver", s.redeliverWebhook)
	protected.Get("/apps/{app_id}/events", s.listEvents)
	protected.Get("/apps/{app_id}/events/{event_id}", s.getEvent)
}

func (s *Server) createWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var req xpromo.CreateWebhookEndpointRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if req.URL == "" {
		s.writeErr(w, r, missing("url"))
		return
	}
	if req.Events == nil {
		s.writeErr(w, r, missing("events"))
		return
	}
	e, err := s.services.Webhooks.CreateEndpoint(r.Context(), appID, req)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, e)
}

func (s *Server) listWebhookEndpoints(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	list, err := s.services.Webhooks.Endpoints(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.WebhookEndpointList{Endpoints: list})
}

func (s *Server) getWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	e, err := s.services.Webhooks.Endpoint(r.Context(), appID, chi.URLParam(r, "endpoint_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) updateWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	// Pointers tell an absent field (unchanged) from a given one.
	var req struct {
		URL         *string                       `json:"url"`
		Events      *[]xpromo.EventType           `json:"events"`
		Description *string                       `json:"description"`
		Status      *xpromo.WebhookEndpointStatus `json:"status"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	e, err := s.services.Webhooks.UpdateEndpoint(r.Context(), appID, chi.URLParam(r, "endpoint_id"), webhooks.EndpointUpdate{
		URL: req.URL, Events: req.Events, Description: req.Description, Status: req.Status,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) deleteWebhookEndpoint(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if err := s.services.Webhooks.DeleteEndpoint(r.Context(), appID, chi.URLParam(r, "endpoint_id")); err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	e, err := s.services.Webhooks.RotateSecret(r.Context(), appID, chi.URLParam(r, "endpoint_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) listWebhookAttempts(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	q := r.URL.Query()
	limit, err := intParam(q, "limit", webhooks.DefaultAttemptLimit, 1, webhooks.MaxAttemptLimit, apperr.InvalidLimit)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page, err := s.services.Webhooks.Attempts(r.Context(), appID, chi.URLParam(r, "endpoint_id"), q.Get("event_id"), q.Get("cursor"), limit)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) redeliverWebhook(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var req xpromo.RedeliverRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	d, err := s.services.Webhooks.Redeliver(r.Context(), appID, chi.URLParam(r, "endpoint_id"), req.EventID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, d)
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	q := r.URL.Query()
	p := webhooks.EventParams{Cursor: q.Get("cursor")}
	for _, t := range q["type"] {
		p.Types = append(p.Types, xpromo.EventType(t))
	}
	if q.Has("since") {
		p.Since, err = time.Parse(time.RFC3339Nano, q.Get("since"))
		if err != nil {
			s.writeErr(w, r, fieldErr(apperr.InvalidDate, "since", "since must be an RFC 3339 date-time such as 2026-11-21T09:00:00Z, got %q", q.Get("since")))
			return
		}
	}
	if p.Limit, err = intParam(q, "limit", webhooks.DefaultEventLimit, 1, webhooks.MaxEventLimit, apperr.InvalidLimit); err != nil {
		s.writeErr(w, r, err)
		return
	}
	wait, err := intParam(q, "wait", 0, 0, int(webhooks.MaxWait/time.Second), apperr.InvalidDuration)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	p.Wait = time.Duration(wait) * time.Second
	page, err := s.services.Webhooks.ListEvents(r.Context(), appID, p)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	e, err := s.services.Webhooks.Event(r.Context(), appID, chi.URLParam(r, "event_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// intParam reads an optional integer query parameter within [lo, hi]; a
// bad value answers code.
func intParam(q url.Values, name string, def, lo, hi int, code string) (int, error) {
	if !q.Has(name) {
		return def, nil
	}
	s := q.Get(name)
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi || strings.TrimSpace(s) != s || strings.HasPrefix(s, "+") {
		return 0, fieldErr(code, name, "%s must be an integer from %d to %d, got %q", name, lo, hi, s)
	}
	return n, nil
}
