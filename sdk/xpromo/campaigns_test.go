package xpromo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

func campaignJSON(id string) string {
	return fmt.Sprintf(`{"campaign_id":%q,"daily_budget_cents":2000,"status":"active","status_reason":null,"floor_cents":400,"max_bid_cents":null,`+
		`"app_id":"app_1","categories":["productivity"],"spent_today_cents":150,"created_at":"2026-11-21T09:00:00Z","updated_at":"2026-11-21T09:00:00Z"}`, id)
}

func TestCampaignsWalksPages(t *testing.T) {
	const pages = 3
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		page := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			page, _ = strconv.Atoi(strings.TrimPrefix(c, "c"))
		}
		next := ""
		if page+1 < pages {
			next = fmt.Sprintf(`,"next_cursor":"c%d"`, page+1)
		}
		writeJSON(w, 200, `{"campaigns":[`+campaignJSON(fmt.Sprint("cmp_", page))+`]`+next+`}`)
	})
	var ids []string
	for cmp, err := range f.client().Campaigns(context.Background(), &xpromo.CampaignListParams{Status: xpromo.CampaignStatusActive, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		if cmp.SpentTodayCents != 150 || cmp.AppID != "app_1" || cmp.Categories[0] != "productivity" {
			t.Errorf("campaign %+v", cmp)
		}
		ids = append(ids, cmp.CampaignID)
	}
	if got := strings.Join(ids, ","); got != "cmp_0,cmp_1,cmp_2" {
		t.Errorf("campaigns %s", got)
	}
	want := []string{"limit=1&status=active", "cursor=c1&limit=1&status=active", "cursor=c2&limit=1&status=active"}
	for i, r := range f.requests() {
		if r.Method != "GET" || r.Path != "/v1/campaigns" || r.RawQuery != want[i] {
			t.Errorf("request %d: %s %s?%s", i, r.Method, r.Path, r.RawQuery)
		}
	}
}

func TestUpdateCampaignBody(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, campaignJSON("cmp_1"))
	})
	c := f.client()
	budget, bid := int64(3000), int64(650)
	for _, x := range []struct {
		params *xpromo.UpdateCampaignRequest
		body   string
	}{
		{&xpromo.UpdateCampaignRequest{DailyBudgetCents: &budget}, `{"daily_budget_cents":3000}`},
		{&xpromo.UpdateCampaignRequest{MaxBidCents: &bid, Categories: []string{"finance"}}, `{"categories":["finance"],"max_bid_cents":650}`},
		{&xpromo.UpdateCampaignRequest{FloorPrice: true}, `{"max_bid_cents":null}`},
		{nil, `{}`},
	} {
		got, err := c.UpdateCampaign(context.Background(), "cmp_1", x.params, xpromo.WithIdempotencyKey("k"))
		if err != nil || got.CampaignID != "cmp_1" {
			t.Fatalf("%+v: %v %v", x.params, got, err)
		}
		reqs := f.requests()
		r := reqs[len(reqs)-1]
		if r.Method != "PATCH" || r.Path != "/v1/campaigns/cmp_1" || r.Body != x.body {
			t.Errorf("%s %s %s, want body %s", r.Method, r.Path, r.Body, x.body)
		}
		if k := r.Header.Get("Idempotency-Key"); k != "" {
			t.Errorf("Idempotency-Key %q sent on PATCH", k)
		}
	}
	// A bid and a floor price at once is the caller's mistake: nothing is sent.
	n := len(f.requests())
	if _, err := c.UpdateCampaign(context.Background(), "cmp_1", &xpromo.UpdateCampaignRequest{MaxBidCents: &bid, FloorPrice: true}); err == nil {
		t.Error("MaxBidCents with FloorPrice accepted")
	}
	if len(f.requests()) != n {
		t.Error("a request was sent")
	}
}

func TestGetCampaign(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 404, errBody("not_found", "campaign not found", nil))
	})
	_, err := f.client().GetCampaign(context.Background(), "cmp/1")
	var e *xpromo.Error
	if !errors.As(err, &e) || e.Code != "not_found" {
		t.Fatalf("err %v", err)
	}
	if r := f.requests()[0]; r.Method != "GET" || r.Path != "/v1/campaigns/cmp/1" {
		t.Errorf("%s %s", r.Method, r.Path)
	}
}
