package httpapi

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/server/attribution"
)

// mountStats: the app's figures per UTC day, from the daily rollups
// (docs/stats.md).
func (s *Server) mountStats(protected chi.Router) {
	protected.Get("/stats/daily", s.getDailyStats)
}

func (s *Server) getDailyStats(w http.ResponseWriter, r *http.Request) {
	appID := callerApp(r.Context())
	q, err := attribution.ParseDailyQuery(r.URL.Query(), s.services.Market.Now())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if q.CampaignID != "" {
		// Another app's campaign answers not_found, exactly like a missing one.
		if _, err := s.services.Market.GetCampaign(r.Context(), appID, q.CampaignID); err != nil {
			s.writeErr(w, r, err)
			return
		}
	}
	page, err := s.services.Attribution.DailyStats(r.Context(), appID, q)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
