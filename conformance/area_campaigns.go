package conformance

import (
	"net/http"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Campaigns: creation and its rules, pause and resume (seed-api
// "POST /campaigns", "Campaign"; decisions §6).
func campaignChecks() []Check {
	return []Check{
		{"a new campaign is throttled, at its categories' floor", checkCampaignCreate},
		{"floor_cents is the highest floor of its categories", checkCampaignFloorIsHighest},
		{"max_bid_cents below the floor answers 422 bid_below_floor", checkBidBelowFloor},
		{"daily_budget_cents under 1000 answers 422 below_minimum", checkBudgetMinimum},
		{"categories must be on the rate card", checkCampaignCategories},
		{"pause and resume", checkPauseResume},
		{"read back, list and change a campaign (additive)", checkCampaignReadAndChange},
	}
}

// createCampaign creates a campaign for a (one category, 1000 cents a day,
// floor buyer, unless mod changes it) and checks the answer's basics.
func createCampaign(c *C, a *App, mod func(*xpromo.CreateCampaignRequest)) *xpromo.Campaign {
	c.Helper()
	req := &xpromo.CreateCampaignRequest{AppID: a.ID, Categories: []string{someCategory(c)}, DailyBudgetCents: 1000}
	if mod != nil {
		mod(req)
	}
	camp, err := a.Client.CreateCampaign(c.Ctx(), req)
	c.NoError(err, "POST /campaigns")
	if camp.CampaignID == "" {
		c.Fatalf("POST /campaigns answered no campaign_id")
	}
	return camp
}

func checkCampaignCreate(c *C) {
	a := c.NewApp()
	cat := rateCard(c).Categories[0]
	camp := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) {
		r.Categories, r.DailyBudgetCents = []string{cat.Key}, 4321
	})
	ex := c.Last()
	if ex.Status != http.StatusCreated {
		c.Errorf("POST /campaigns: status %d, want 201", ex.Status)
	}
	body := ex.JSON(c)
	requireKeys(c, "Campaign", body, "campaign_id", "daily_budget_cents", "status", "floor_cents", "max_bid_cents")
	if camp.Status != xpromo.CampaignStatusThrottled {
		c.Errorf("a new campaign is %q, want throttled", camp.Status)
	}
	if camp.DailyBudgetCents != 4321 {
		c.Errorf("daily_budget_cents %d, want 4321", camp.DailyBudgetCents)
	}
	if body["max_bid_cents"] != nil {
		c.Errorf("a campaign without max_bid_cents answers max_bid_cents %v, want null (a floor buyer)", body["max_bid_cents"])
	}
	if camp.FloorCents < cat.FloorCentsMin || camp.FloorCents > cat.FloorCentsMax {
		c.Errorf("floor_cents %d is outside the rate card's %d..%d for %q", camp.FloorCents, cat.FloorCentsMin, cat.FloorCentsMax, cat.Key)
	}
	bid := camp.FloorCents + 50
	withBid := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) { r.Categories, r.MaxBidCents = []string{cat.Key}, &bid })
	if withBid.MaxBidCents == nil || *withBid.MaxBidCents != bid {
		c.Errorf("max_bid_cents %v, want %d", withBid.MaxBidCents, bid)
	}
	if withBid.Status != xpromo.CampaignStatusThrottled {
		c.Errorf("a new campaign with a bid is %q, want throttled", withBid.Status)
	}
}

func checkCampaignFloorIsHighest(c *C) {
	cats := rateCard(c).Categories
	if len(cats) < 2 {
		c.Skipf("the rate card has one category")
	}
	for _, platform := range []xpromo.Platform{xpromo.PlatformMac, xpromo.PlatformWin} {
		a := c.NewApp(func(r *xpromo.RegisterAppRequest) { r.Platform = platform })
		// The floors of up to four categories, one campaign each, then all together.
		n := min(len(cats), 4)
		highest := int64(0)
		var keys []string
		for _, cat := range cats[:n] {
			camp := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) { r.Categories = []string{cat.Key} })
			highest = max(highest, camp.FloorCents)
			keys = append(keys, cat.Key)
		}
		all := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) { r.Categories = keys })
		if all.FloorCents != highest {
			c.Errorf("%s: a campaign buying %v has floor_cents %d, want the highest of its categories' floors, %d", platform, keys, all.FloorCents, highest)
		}
	}
}

func checkBidBelowFloor(c *C) {
	a := c.NewApp()
	key := someCategory(c)
	floor := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) { r.Categories = []string{key} }).FloorCents
	below := floor - 1
	_, err := a.Client.CreateCampaign(c.Ctx(), &xpromo.CreateCampaignRequest{AppID: a.ID, Categories: []string{key}, DailyBudgetCents: 1000, MaxBidCents: &below})
	c.ExpectError(err, 422, "bid_below_floor", "max_bid_cents one cent under the floor")
	checkErrorBody(c, c.Last())
	at := floor
	camp := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) { r.Categories, r.MaxBidCents = []string{key}, &at })
	if camp.MaxBidCents == nil || *camp.MaxBidCents != floor {
		c.Errorf("a bid at the floor: max_bid_cents %v, want %d", camp.MaxBidCents, floor)
	}
}

func checkBudgetMinimum(c *C) {
	a := c.NewApp()
	_, err := a.Client.CreateCampaign(c.Ctx(), &xpromo.CreateCampaignRequest{AppID: a.ID, Categories: []string{someCategory(c)}, DailyBudgetCents: 999})
	c.ExpectError(err, 422, "below_minimum", "daily_budget_cents 999")
	checkErrorBody(c, c.Last())
	camp := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) { r.DailyBudgetCents = 1000 })
	if camp.DailyBudgetCents != 1000 {
		c.Errorf("daily_budget_cents %d, want 1000", camp.DailyBudgetCents)
	}
}

func checkCampaignCategories(c *C) {
	a := c.NewApp()
	key := someCategory(c)
	for _, tc := range []struct {
		what string
		cats []string
		code string
	}{
		{"a category not on the rate card", []string{"no-such-category-" + randomHex(3)}, "unknown_category"},
		{"no categories", []string{}, "invalid_category"},
		{"a category twice", []string{key, key}, "invalid_category"},
	} {
		_, err := a.Client.CreateCampaign(c.Ctx(), &xpromo.CreateCampaignRequest{AppID: a.ID, Categories: tc.cats, DailyBudgetCents: 1000})
		c.ExpectError(err, 422, tc.code, "campaign with "+tc.what)
	}
}

func checkPauseResume(c *C) {
	a := c.NewApp()
	ctx := c.Ctx()
	camp := createCampaign(c, a, nil)
	p, err := a.Client.PauseCampaign(ctx, camp.CampaignID)
	c.NoError(err, "pause")
	if p.Status != xpromo.CampaignStatusPaused || p.CampaignID != camp.CampaignID {
		c.Errorf("pause answered %+v, want the campaign, paused", p)
	}
	p, err = a.Client.PauseCampaign(ctx, camp.CampaignID)
	c.NoError(err, "pausing a paused campaign")
	if p.Status != xpromo.CampaignStatusPaused {
		c.Errorf("pausing again answered status %q, want paused", p.Status)
	}
	r, err := a.Client.ResumeCampaign(ctx, camp.CampaignID)
	c.NoError(err, "resume")
	// The app is pending, not live and unfunded: resuming returns the
	// campaign to throttled (decisions §6), never active.
	if r.Status != xpromo.CampaignStatusThrottled {
		c.Errorf("resuming the campaign of a pending, unfunded app answered %q, want throttled", r.Status)
	}
	if r.FloorCents != camp.FloorCents || r.DailyBudgetCents != camp.DailyBudgetCents {
		c.Errorf("resume changed the campaign: %+v, was %+v", r, camp)
	}
	_, err = a.Client.PauseCampaign(ctx, missingLike(camp.CampaignID))
	c.ExpectError(err, http.StatusNotFound, "not_found", "pausing a missing campaign")
}

// checkCampaignReadAndChange: the additive GET /campaigns/{id}, GET
// /campaigns and PATCH /campaigns/{id} (docs/marketplace.md, "Reading and
// changing a campaign").
func checkCampaignReadAndChange(c *C) {
	a := c.NewApp()
	ctx := c.Ctx()
	camp := createCampaign(c, a, nil)
	got, err := a.Client.GetCampaign(ctx, camp.CampaignID)
	c.NoError(err, "GET /campaigns/{campaign_id}")
	if got.CampaignID != camp.CampaignID || got.DailyBudgetCents != camp.DailyBudgetCents || got.FloorCents != camp.FloorCents {
		c.Errorf("GET answered %+v, want the campaign created, %+v", got, camp)
	}
	_, err = a.Client.GetCampaign(ctx, missingLike(camp.CampaignID))
	c.ExpectError(err, http.StatusNotFound, "not_found", "reading a missing campaign")

	newer := createCampaign(c, a, nil)
	var listed []string
	for cmp, err := range a.Client.Campaigns(ctx, &xpromo.CampaignListParams{Limit: 1}) {
		c.NoError(err, "GET /campaigns")
		listed = append(listed, cmp.CampaignID)
	}
	if len(listed) != 2 || listed[0] != newer.CampaignID || listed[1] != camp.CampaignID {
		c.Errorf("GET /campaigns, a page at a time, listed %v, want newest first [%s %s]", listed, newer.CampaignID, camp.CampaignID)
	}
	_, err = a.Client.ListCampaigns(ctx, &xpromo.CampaignListParams{Status: "running"})
	c.ExpectError(err, 422, "invalid_campaign_status", "listing by an unknown status")

	budget, bid := int64(2500), camp.FloorCents+25
	ch, err := a.Client.UpdateCampaign(ctx, camp.CampaignID, &xpromo.UpdateCampaignRequest{DailyBudgetCents: &budget, MaxBidCents: &bid})
	c.NoError(err, "PATCH /campaigns/{campaign_id}")
	if ch.DailyBudgetCents != budget || ch.MaxBidCents == nil || *ch.MaxBidCents != bid {
		c.Errorf("PATCH answered budget %d, bid %v; want %d, %d", ch.DailyBudgetCents, ch.MaxBidCents, budget, bid)
	}
	ch, err = a.Client.UpdateCampaign(ctx, camp.CampaignID, &xpromo.UpdateCampaignRequest{FloorPrice: true})
	c.NoError(err, "PATCH max_bid_cents null")
	if ch.MaxBidCents != nil || ch.DailyBudgetCents != budget {
		c.Errorf("after max_bid_cents null: bid %v, budget %d; want null, %d", ch.MaxBidCents, ch.DailyBudgetCents, budget)
	}
	low := camp.FloorCents - 1
	_, err = a.Client.UpdateCampaign(ctx, camp.CampaignID, &xpromo.UpdateCampaignRequest{MaxBidCents: &low})
	c.ExpectError(err, 422, "bid_below_floor", "changing the bid to under the floor")
	_, err = a.Client.UpdateCampaign(ctx, camp.CampaignID, &xpromo.UpdateCampaignRequest{})
	c.ExpectError(err, 422, "missing_field", "a change of nothing")
}
