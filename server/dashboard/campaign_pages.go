package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"slices"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/market"
)

// The campaigns screen: the list with today's spend against the daily
// budget, create, edit, pause and resume.

type campaignsData struct {
	Campaigns  []campaignRow
	Next       string
	Categories []xpromo.RateCardCategory
	CreateKey  string
}

type campaignRow struct {
	market.Campaign
	SpentPct int // today's spend as a share of the budget, 0 to 100
	Key      string
}

func spentPct(c market.Campaign) int {
	if c.DailyBudgetCents <= 0 {
		return 0
	}
	return int(min(100, c.SpentTodayCents*100/c.DailyBudgetCents))
}

func (d *Dashboard) campaigns(w http.ResponseWriter, r *http.Request) {
	ctx, id := r.Context(), appID(r)
	after, err := parseCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		d.fail(w, r, err)
		return
	}
	page, err := d.cfg.Services.Market.ListCampaigns(ctx, market.CampaignQuery{AppID: id, After: after, Limit: 50, Day: market.UTCDay(d.now())})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	card, err := d.cfg.Services.Market.RateCard(ctx)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := campaignsData{Categories: card.Categories, CreateKey: newFormKey()}
	for _, c := range page.Campaigns {
		data.Campaigns = append(data.Campaigns, campaignRow{Campaign: c, SpentPct: spentPct(c), Key: newFormKey()})
	}
	if page.Next != "" {
		data.Next = url.Values{"cursor": {page.Next}}.Encode()
	}
	d.render(w, r, http.StatusOK, "campaigns", viewOf("Campaigns", "campaigns", data))
}

// campaignForm reads the create and edit forms: categories (checkboxes),
// the daily budget and the optional maximum bid, in euros.
func campaignForm(f url.Values) (categories []string, budget int64, maxBid *int64, ok bool) {
	categories = f["category"]
	if len(categories) > 32 {
		return nil, 0, nil, false
	}
	budget, err := parseEuros(f.Get("daily_budget_eur"))
	if err != nil {
		return nil, 0, nil, false
	}
	if s := f.Get("max_bid_eur"); s != "" {
		bid, err := parseEuros(s)
		if err != nil {
			return nil, 0, nil, false
		}
		maxBid = &bid
	}
	return categories, budget, maxBid, true
}

const badCampaignForm = "The budget and the bid must be euro amounts like 50 or 4.50, and at most 32 categories."

func (d *Dashboard) createCampaign(w http.ResponseWriter, r *http.Request) {
	cats, budget, bid, ok := campaignForm(r.PostForm)
	if !ok {
		d.renderError(w, r, http.StatusUnprocessableEntity, badCampaignForm)
		return
	}
	id := appID(r)
	c, err := d.cfg.Services.Market.CreateCampaign(r.Context(), id, market.CreateCampaignRequest{AppID: id, Categories: cats, DailyBudgetCents: budget, MaxBidCents: bid})
	if err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/campaigns/"+url.PathEscape(c.ID)+"?done=created", http.StatusSeeOther)
}

type campaignData struct {
	Campaign   market.Campaign
	SpentPct   int
	Categories []categoryChoice
	Key        string // the pause or resume form's
	EditKey    string
	BudgetEUR  string
	MaxBidEUR  string
}

type categoryChoice struct {
	xpromo.RateCardCategory
	Checked bool
}

func euros(cents int64) string { return eur(cents)[len("EUR "):] }

func (d *Dashboard) campaign(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := d.cfg.Services.Market.GetCampaign(ctx, appID(r), chi.URLParam(r, "campaign_id"))
	if err != nil {
		d.fail(w, r, err) // another app's campaign is not_found
		return
	}
	card, err := d.cfg.Services.Market.RateCard(ctx)
	if err != nil {
		d.fail(w, r, err)
		return
	}
	data := campaignData{Campaign: c, SpentPct: spentPct(c), Key: newFormKey(), EditKey: newFormKey(), BudgetEUR: euros(c.DailyBudgetCents)}
	if c.MaxBidCents != nil {
		data.MaxBidEUR = euros(*c.MaxBidCents)
	}
	for _, k := range card.Categories {
		data.Categories = append(data.Categories, categoryChoice{RateCardCategory: k, Checked: slices.Contains(c.Categories, k.Key)})
	}
	d.render(w, r, http.StatusOK, "campaign", viewOf("Campaign "+c.ID, "campaigns", data))
}

func (d *Dashboard) updateCampaign(w http.ResponseWriter, r *http.Request) {
	cats, budget, bid, ok := campaignForm(r.PostForm)
	if !ok {
		d.renderError(w, r, http.StatusUnprocessableEntity, badCampaignForm)
		return
	}
	id := chi.URLParam(r, "campaign_id")
	// An empty bid makes the campaign a floor buyer.
	req := market.UpdateCampaignRequest{DailyBudgetCents: &budget, SetMaxBid: true, MaxBidCents: bid, Categories: &cats}
	if _, err := d.cfg.Services.Market.UpdateCampaign(r.Context(), appID(r), id, req); err != nil {
		d.fail(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/campaigns/"+url.PathEscape(id)+"?done=saved", http.StatusSeeOther)
}

func (d *Dashboard) pauseCampaign(w http.ResponseWriter, r *http.Request) {
	d.switchCampaign(w, r, d.cfg.Services.Market.PauseCampaign, "paused")
}

func (d *Dashboard) resumeCampaign(w http.ResponseWriter, r *http.Request) {
	d.switchCampaign(w, r, d.cfg.Services.Market.ResumeCampaign, "resumed")
}

func (d *Dashboard) switchCampaign(w http.ResponseWriter, r *http.Request, do func(context.Context, string, string) (market.Campaign, error), done string) {
	id := chi.URLParam(r, "campaign_id")
	if _, err := do(r.Context(), appID(r), id); err != nil {
		d.fail(w, r, err)
		return
	}
	back := Prefix + "/campaigns"
	if r.PostForm.Get("back") == "campaign" {
		back += "/" + url.PathEscape(id)
	}
	http.Redirect(w, r, back+"?done="+done, http.StatusSeeOther)
}
