package httpapi

import (
	"context"
	"net/http"

	"github.com/xpromo/xpromo/server/apperr"
)

type statusBody struct {
	Status string `json:"status"`
}

// handleHealthz is liveness: the process is up and serving. It checks no
// dependency, so a database outage does not get the process restarted.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
}

// handleReadyz is readiness: the store answers a ping within the ready
// timeout. A load balancer stops routing to an instance that answers 503.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.readyTimeout)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		// The cause goes to the log, not to the client: it can name hosts.
		s.log.LogAttrs(r.Context(), levelWarn, "readiness check failed",
			attrRequestID(r.Context()), errAttr(err))
		writeError(w, http.StatusServiceUnavailable, apperr.Unavailable, "the store is not reachable")
		return
	}
	writeJSON(w, http.StatusOK, statusBody{Status: "ready"})
}
