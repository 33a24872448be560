package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
)

// mountEarnMode: GET and POST /apps/{app_id}/earn-mode (docs/apps.md, "Earn
// mode").
func (s *Server) mountEarnMode(protected chi.Router) {
	protected.Get("/apps/{app_id}/earn-mode", s.getEarnMode)
	protected.Post("/apps/{app_id}/earn-mode", s.setEarnMode)
}

func (s *Server) getEarnMode(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	st, err := s.services.Apps.EarnMode(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, earnModeState(st))
}

func (s *Server) setEarnMode(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var req xpromo.SetEarnModeRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeErr(w, r, err)
		return
	}
	st, err := s.services.Apps.SetEarnMode(r.Context(), appID, string(req.EarnMode))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, earnModeState(st))
}

func earnModeState(st apps.EarnModeState) xpromo.EarnModeState {
	return xpromo.EarnModeState{AppID: st.AppID, EarnMode: xpromo.EarnMode(st.Mode), EffectiveAt: st.Since}
}
