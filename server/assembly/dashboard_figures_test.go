package assembly_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/openapi/openapitest"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// dashboardPage signs a browser in with key and reads path: the dashboard's
// pages are for browsers, outside the API document the checker holds a.http to.
func dashboardPage(t *testing.T, a *api, key string, paths ...string) []string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", a.url+"/dashboard/sign-in", strings.NewReader(url.Values{"key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", a.url)
	resp, err := b.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	var out []string
	for _, p := range paths {
		resp, err := b.Get(a.url + p)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", p, raw)
		out = append(out, string(raw))
	}
	return out
}

func eurText(c int64) string { return fmt.Sprintf("EUR %d.%02d", c/100, c%100) }

// The figures the dashboard shows are the API's: after one paid install,
// played through the SDK endpoints and cleared, the overview's daily table,
// KPIs and balance equal GET /v1/stats/daily and GET …/balance for both
// apps, and the chain's page verifies both signatures with the apps' keys.
func TestDashboardFiguresEqualTheAPIs(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		a := start(t, openapitest.New(t), s, assembly.Config{ReadLimit: 10_000, WriteLimit: 10_000})
		pub := a.register("FigPub", "com.example.figpub", "productivity")
		adv := a.register("FigAdv", "com.example.figadv", "")
		a.topUp(adv, 20_000)
		a.expect(201, a.do("POST", "/v1/campaigns", adv.key, map[string]any{"app_id": adv.id, "categories": []string{"productivity"}, "daily_budget_cents": 5000}))
		tok := a.install(pub, adv, "device-1")
		a.advance(48 * time.Hour)
		a.heartbeat(adv, tok, "device-1")
		assert.Equal(t, xpromo.SweepResult{Cleared: 1}, decode[xpromo.SweepResult](t, a.expect(200, a.do("POST", "/v1/admin/attribution/sweep", adminToken, nil))))

		today := a.serverNow().UTC().Truncate(24 * time.Hour)
		from := today.AddDate(0, 0, -6).Format(time.DateOnly)
		for _, app := range []sdkApp{pub, adv} {
			daily := decode[xpromo.DailyStatsPage](t, a.expect(200, a.do("GET", "/v1/stats/daily?from="+from+"&to="+today.Format(time.DateOnly), app.key, nil)))
			bal := decode[xpromo.Balance](t, a.expect(200, a.do("GET", "/v1/apps/"+app.id+"/balance", app.key, nil)))
			pages := dashboardPage(t, a, app.key, "/dashboard/", "/dashboard/money")
			overview, money := pages[0], pages[1]
			var installs, cleared, spend, shown, driven, earned int64
			for _, d := range daily.Days {
				ad, pb := d.Advertiser, d.Publisher
				row := fmt.Sprintf(`<tr><th scope="row">%s</th><td>%d</td><td>%d</td><td>%s</td><td>%d</td><td>%d</td><td>%s</td></tr>`,
					d.Day, ad.Installs, ad.Cleared, eurText(ad.SpendCents), pb.Impressions, pb.Installs, eurText(pb.EarnedCents))
				assert.Contains(t, overview, row, "the table's row of %s", d.Day)
				installs += ad.Installs
				cleared += ad.Cleared
				spend += ad.SpendCents
				shown += pb.Impressions
				driven += pb.Installs
				earned += pb.EarnedCents
			}
			for label, value := range map[string]string{
				"Installs of your app": fmt.Sprint(installs), "Cleared installs (paid)": fmt.Sprint(cleared), "Spend": eurText(spend),
				"Impressions you showed": fmt.Sprint(shown), "Installs you drove": fmt.Sprint(driven), "Earned": eurText(earned),
			} {
				assert.Contains(t, overview, `<span class="kpi-label">`+label+`</span> <span class="kpi-value">`+value+`</span>`, label)
			}
			for _, page := range []string{overview, money} {
				assert.Contains(t, page, "<dt>Wallet</dt><dd>"+eurText(bal.WalletCents)+"</dd>")
				assert.Contains(t, page, "<dt>Held in escrow</dt><dd>"+eurText(bal.EscrowHeldCents)+"</dd>")
			}
			if app.id == adv.id {
				assert.Equal(t, int64(1), installs)
				assert.Equal(t, int64(400), spend, "productivity's mac floor")
			} else {
				assert.Equal(t, int64(280), earned)
			}
		}

		// The chain's page verifies both signatures, saying with which key.
		chains := decode[xpromo.ChainPage](t, a.expect(200, a.do("GET", "/v1/chains", adv.key, nil)))
		require.Len(t, chains.Chains, 1)
		c := chains.Chains[0]
		page := dashboardPage(t, a, pub.key, "/dashboard/installs/"+c.ChainID)[0]
		assert.Equal(t, 2, strings.Count(page, "✓ verifies"), page)
		assert.Contains(t, page, "verifies with SDK key "+pub.sdk.ID+" of "+pub.id)
		assert.Contains(t, page, "verifies with SDK key "+adv.sdk.ID+" of "+adv.id)
		assert.Contains(t, page, "cleared")
	})
}
