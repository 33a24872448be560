package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/market"
)

// mountMarket: the rate card, campaigns, stats and network stats, and the
// operators' floor cuts.
func (s *Server) mountMarket(public, protected, admin chi.Router) {
	public.Get("/rate-card", s.getRateCard)
	public.Get("/network-stats", s.getNetworkStats)
	protected.Post("/campaigns", s.createCampaign)
	protected.Post("/campaigns/{campaign_id}/pause", s.pauseCampaign)
	protected.Post("/campaigns/{campaign_id}/resume", s.resumeCampaign)
	protected.Get("/campaigns", s.listCampaigns)
	protected.Get("/campaigns/{campaign_id}", s.getCampaign)
	protected.Patch("/campaigns/{campaign_id}", s.updateCampaign)
	protected.Get("/apps/{app_id}/stats", s.getStats)
	admin.Post("/admin/categories/{category}/floors", s.cutFloor)
}

func (s *Server) getRateCard(w http.ResponseWriter, r *http.Request) {
	card, err := s.services.Market.RateCard(r.Context())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, card)
}

func (s *Server) getNetworkStats(w http.ResponseWriter, r *http.Request) {
	stats, err := s.services.Market.NetworkStats(r.Context())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, stats)
}

// createCampaignBody is xpromo.CreateCampaignRequest with pointers, so that
// a missing required field is told apart from a zero one. max_bid_cents is
// raw: omitted means a floor buyer, while null is refused like any other
// non-integer, as the document defines the field as an integer.
type createCampaignBody struct {
	AppID            *string         `json:"app_id"`
	Categories       *[]string       `json:"categories"`
	DailyBudgetCents *int64          `json:"daily_budget_cents"`
	MaxBidCents      json.RawMessage `json:"max_bid_cents"`
}

// maxBid parses max_bid_cents: nil when omitted.
func (b createCampaignBody) maxBid() (*int64, error) {
	if len(b.MaxBidCents) == 0 {
		return nil, nil
	}
	var v int64
	if string(b.MaxBidCents) == "null" || json.Unmarshal(b.MaxBidCents, &v) != nil {
		e := apperr.New(apperr.InvalidType, "field \"max_bid_cents\" must be an integer, not %s; omit it for a campaign that buys at the floor", b.MaxBidCents)
		e.Field = "max_bid_cents"
		return nil, e
	}
	return &v, nil
}

func missing(field string) error {
	e := apperr.New(apperr.MissingField, "%s is required", field)
	e.Field = field
	return e
}

func (s *Server) createCampaign(w http.ResponseWriter, r *http.Request) {
	var body createCampaignBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	var err error
	switch {
	case body.AppID == nil:
		err = missing("app_id")
	case body.Categories == nil:
		err = missing("categories")
	case body.DailyBudgetCents == nil:
		err = missing("daily_budget_cents")
	}
	maxBid, err2 := body.maxBid()
	if err == nil {
		err = err2
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	c, err := s.services.Market.CreateCampaign(r.Context(), callerApp(r.Context()), market.CreateCampaignRequest{
		AppID:            *body.AppID,
		Categories:       *body.Categories,
		DailyBudgetCents: *body.DailyBudgetCents,
		MaxBidCents:      maxBid,
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, c.Wire())
}

func (s *Server) pauseCampaign(w http.ResponseWriter, r *http.Request) {
	c, err := s.services.Market.PauseCampaign(r.Context(), callerApp(r.Context()), chi.URLParam(r, "campaign_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c.Wire())
}

func (s *Server) resumeCampaign(w http.ResponseWriter, r *http.Request) {
	c, err := s.services.Market.ResumeCampaign(r.Context(), callerApp(r.Context()), chi.URLParam(r, "campaign_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c.Wire())
}

func (s *Server) listCampaigns(w http.ResponseWriter, r *http.Request) {
	q, err := market.ParseCampaignQuery(callerApp(r.Context()), r.URL.Query())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	page, err := s.services.Market.ListCampaigns(r.Context(), q)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := xpromo.CampaignPage{Campaigns: make([]xpromo.Campaign, len(page.Campaigns))}
	for i, c := range page.Campaigns {
		out.Campaigns[i] = c.Wire()
	}
	if page.Next != "" {
		out.NextCursor = &page.Next
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getCampaign(w http.ResponseWriter, r *http.Request) {
	c, err := s.services.Market.GetCampaign(r.Context(), callerApp(r.Context()), chi.URLParam(r, "campaign_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c.Wire())
}

// updateCampaignBody is the body of PATCH /v1/campaigns/{campaign_id}. Its
// fields are raw so that null is told apart from absent: "max_bid_cents":
// null makes the campaign a floor buyer, while a null budget or category
// list is refused like any other value of the wrong type.
type updateCampaignBody struct {
	DailyBudgetCents json.RawMessage `json:"daily_budget_cents"`
	MaxBidCents      json.RawMessage `json:"max_bid_cents"`
	Categories       json.RawMessage `json:"categories"`
}

// request maps the body to the market's request.
func (b updateCampaignBody) request() (market.UpdateCampaignRequest, error) {
	var req market.UpdateCampaignRequest
	if len(b.DailyBudgetCents) > 0 {
		var v int64
		if err := rawValue(b.DailyBudgetCents, &v, "daily_budget_cents", "an integer"); err != nil {
			return req, err
		}
		req.DailyBudgetCents = &v
	}
	if len(b.MaxBidCents) > 0 {
		req.SetMaxBid = true
		if string(b.MaxBidCents) != "null" {
			var v int64
			if err := rawValue(b.MaxBidCents, &v, "max_bid_cents", "an integer, or null to buy at the floor"); err != nil {
				return req, err
			}
			req.MaxBidCents = &v
		}
	}
	if len(b.Categories) > 0 {
		var v []string
		if err := rawValue(b.Categories, &v, "categories", "an array of category keys"); err != nil {
			return req, err
		}
		req.Categories = &v
	}
	return req, nil
}

// rawValue decodes a present field into dst; null or a value of another
// type is invalid_type.
func rawValue(raw json.RawMessage, dst any, field, want string) error {
	if string(raw) == "null" || json.Unmarshal(raw, dst) != nil {
		e := apperr.New(apperr.InvalidType, "field %q must be %s, not %s", field, want, raw)
		e.Field = field
		return e
	}
	return nil
}

func (s *Server) updateCampaign(w http.ResponseWriter, r *http.Request) {
	var body updateCampaignBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	req, err := body.request()
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	c, err := s.services.Market.UpdateCampaign(r.Context(), callerApp(r.Context()), chi.URLParam(r, "campaign_id"), req)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c.Wire())
}

func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	period := xpromo.DefaultPeriod
	if vs, ok := r.URL.Query()["period"]; ok {
		// Present but empty is a mistake, not a request for the default.
		if period = xpromo.Period(vs[0]); period == "" {
			e := apperr.New(apperr.InvalidPeriod, "period must be one of last_7_days, last_30_days, last_90_days, or omitted")
			e.Field = "period"
			s.writeErr(w, r, e)
			return
		}
	}
	stats, err := s.services.Market.Stats(r.Context(), appID, period)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, stats)
}

// cutFloorBody is the body of POST /v1/admin/categories/{category}/floors.
type cutFloorBody struct {
	Platform   *string `json:"platform"`
	FloorCents *int64  `json:"floor_cents"`
	Reason     *string `json:"reason"`
}

// categoryFloors is the answer of the admin floor cut: a category with its
// current floor per platform (described inline in openapi.json).
type categoryFloors struct {
	Key    string         `json:"key"`
	Label  string         `json:"label"`
	Floors platformFloors `json:"floors"`
}

// platformFloors are a category's current floors, in cents.
type platformFloors struct {
	Mac int64 `json:"mac"`
	Win int64 `json:"win"`
}

func (s *Server) cutFloor(w http.ResponseWriter, r *http.Request) {
	var body cutFloorBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	var err error
	switch {
	case body.Platform == nil:
		err = missing("platform")
	case body.FloorCents == nil:
		err = missing("floor_cents")
	case body.Reason == nil:
		err = missing("reason")
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	cf, err := s.services.Market.CutFloor(r.Context(), chi.URLParam(r, "category"), xpromo.Platform(*body.Platform), *body.FloorCents, *body.Reason)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, categoryFloors{Key: cf.Key, Label: cf.Label, Floors: platformFloors{
		Mac: cf.Floors[xpromo.PlatformMac],
		Win: cf.Floors[xpromo.PlatformWin],
	}})
}
