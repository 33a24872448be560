package dashboard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// Create, edit, pause and resume a campaign in the browser; the API sees
// each change, and another app's campaign is not found.
func TestCampaignsScreen(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	_, key := s.app("Clip")
	_, otherKey := s.app("Other")
	b := s.browser()
	b.signIn(key)
	list := b.get("/dashboard/campaigns")
	require.Equal(t, http.StatusOK, list.StatusCode)
	assert.Contains(t, list.Body, "No campaigns yet")
	form := url.Values{"idempotency_key": {list.formKeyFor(t, "/dashboard/campaigns")}, "category": {"productivity"}, "daily_budget_eur": {"50"}}
	p := b.post("/dashboard/campaigns", form)
	require.Equal(t, http.StatusSeeOther, p.StatusCode, p.Body)
	again := b.post("/dashboard/campaigns", form)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "a double click creates one campaign")
	loc := p.Header.Get("Location")
	id := strings.TrimPrefix(strings.Split(loc, "?")[0], "/dashboard/campaigns/")

	var api struct {
		Campaigns []struct {
			ID               string `json:"campaign_id"`
			DailyBudgetCents int64  `json:"daily_budget_cents"`
			Status           string `json:"status"`
		} `json:"campaigns"`
	}
	require.Equal(t, 200, s.api("GET", "/v1/campaigns", key, nil, &api))
	require.Len(t, api.Campaigns, 1)
	assert.Equal(t, id, api.Campaigns[0].ID)
	assert.Equal(t, int64(5000), api.Campaigns[0].DailyBudgetCents)

	page := b.get(loc)
	require.Equal(t, http.StatusOK, page.StatusCode)
	assert.Contains(t, page.Body, "Campaign created.")
	assert.Contains(t, page.Body, "EUR 0.00 of EUR 50.00")
	edit := url.Values{"idempotency_key": {page.formKeyFor(t, "/dashboard/campaigns/"+id)}, "category": {"productivity"}, "daily_budget_eur": {"75.50"}}
	require.Equal(t, http.StatusSeeOther, b.post("/dashboard/campaigns/"+id, edit).StatusCode)
	require.Equal(t, 200, s.api("GET", "/v1/campaigns", key, nil, &api))
	assert.Equal(t, int64(7550), api.Campaigns[0].DailyBudgetCents)

	list = b.get("/dashboard/campaigns")
	require.Equal(t, http.StatusOK, list.StatusCode, list.Body)
	pause := "/dashboard/campaigns/" + id + "/pause"
	require.Equal(t, http.StatusSeeOther, b.post(pause, url.Values{"idempotency_key": {list.formKeyFor(t, pause)}}).StatusCode)
	require.Equal(t, 200, s.api("GET", "/v1/campaigns", key, nil, &api))
	assert.Equal(t, "paused", api.Campaigns[0].Status)
	list = b.get("/dashboard/campaigns?done=paused")
	resume := "/dashboard/campaigns/" + id + "/resume"
	require.Equal(t, http.StatusSeeOther, b.post(resume, url.Values{"idempotency_key": {list.formKeyFor(t, resume)}}).StatusCode)
	require.Equal(t, 200, s.api("GET", "/v1/campaigns", key, nil, &api))
	assert.NotEqual(t, "paused", api.Campaigns[0].Status)

	other := s.browser()
	other.signIn(otherKey)
	assert.Equal(t, http.StatusNotFound, other.get("/dashboard/campaigns/"+id).StatusCode)
	p = other.post(pause, url.Values{"idempotency_key": {"other-1"}})
	assert.Equal(t, http.StatusNotFound, p.StatusCode)
}
