package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// The money screen's earn mode, payout account and payout forms act as the
// API does.
func TestMoneyForms(t *testing.T) {
	s := newStack(t, storagetest.SQLite(t))
	id, key := s.app("Clip")
	b := s.browser()
	b.signIn(key)
	money := b.get("/dashboard/money")
	require.Equal(t, http.StatusOK, money.StatusCode)
	assert.Contains(t, money.Body, "since ")

	p := b.post("/dashboard/money/earn-mode", url.Values{"idempotency_key": {money.formKeyFor(t, "/dashboard/money/earn-mode")}, "earn_mode": {"credits"}})
	require.Equal(t, http.StatusSeeOther, p.StatusCode, p.Body)
	var mode struct {
		EarnMode string `json:"earn_mode"`
	}
	require.Equal(t, 200, s.api("GET", "/v1/apps/"+id+"/earn-mode", key, nil, &mode))
	assert.Equal(t, "credits", mode.EarnMode)
	assert.Contains(t, b.get(p.Header.Get("Location")).Body, `<option value="credits" selected>`)

	// Nothing is withdrawable, and there is no payout account: the payout
	// is refused as the API refuses it, with its status and code.
	p = b.post("/dashboard/money/payout", url.Values{"idempotency_key": {money.formKeyFor(t, "/dashboard/money/payout")}})
	var refusal struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	status := s.api("POST", "/v1/apps/"+id+"/payout", key, nil, &refusal)
	assert.Equal(t, status, p.StatusCode)
	require.NotEmpty(t, refusal.Error.Code)
	assert.Contains(t, p.Body, "("+refusal.Error.Code+")")

	// The onboarding answers as the API's does: a redirect to the
	// processor's page, or the API's refusal, never a server error.
	p = b.post("/dashboard/money/payout-account", url.Values{"idempotency_key": {money.formKeyFor(t, "/dashboard/money/payout-account")}})
	assert.Less(t, p.StatusCode, 500, p.Body)
	t.Logf("onboarding: %d %s", p.StatusCode, p.Header.Get("Location"))
}
