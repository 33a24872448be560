package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/guide"
	"github.com/xpromo/xpromo/server/ledger"
)

// TestCommands runs every command against the real server, in table and
// JSON form, and compares the output with testdata/*.golden.
func TestCommands(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	n := e.normalizer()

	// Public reads.
	golden(t, n, "rate-card", e.ok("rate-card").stdout)
	golden(t, n, "rate-card.json", e.ok("rate-card", "--json").stdout)
	golden(t, n, "network-stats", e.ok("network-stats").stdout)
	golden(t, n, "network-stats.json", e.ok("network-stats", "--json").stdout)
	assert.Equal(t, string(guide.Markdown), e.ok("guide").stdout, "the guide is printed as served")
	var md string
	require.NoError(t, json.Unmarshal([]byte(e.ok("guide", "--json").stdout), &md))
	assert.Equal(t, string(guide.Markdown), md)

	// Registration: the table shows the key once and saves the profile.
	reg := e.ok("apps", "register", "--name", "Clipboard Pro", "--platform", "mac", "--bundle-id", "com.example.clipboardpro",
		"--domain", "example.com", "--download-url", "https://example.com/ClipboardPro.dmg", "--contact-email", "team@example.com",
		"--category", "productivity")
	golden(t, n, "apps-register", reg.stdout)
	regJSON := e.ok("apps", "register", "--profile", "second", "--name", "Second", "--platform", "win", "--bundle-id", "com.example.second",
		"--domain", "example.com", "--download-url", "https://example.com/Second.exe", "--contact-email", "team@example.com",
		"--appcast-url", "https://example.com/second/appcast.xml", "--json")
	golden(t, n, "apps-register.json", regJSON.stdout)
	var second xpromo.RegisterAppResponse
	require.NoError(t, json.Unmarshal([]byte(regJSON.stdout), &second))
	require.NotEmpty(t, second.APIKey, "--json prints the API's answer, key included")

	golden(t, n, "apps-score", e.ok("apps", "score").stdout)
	golden(t, n, "apps-score.json", e.ok("apps", "score", "--json").stdout)
	golden(t, n, "config-show", e.ok("config", "show").stdout)

	// Operators.
	appID := appIDRe.FindStringSubmatch(reg.stdout)[1]
	golden(t, n, "admin-approve", e.ok("admin", "approve", appID, "--reason", "reviewed").stdout)
	golden(t, n, "admin-reject.json", e.ok("admin", "reject", second.AppID, "--reason", "unsigned binary", "--json").stdout)
	golden(t, n, "admin-review", e.ok("admin", "review", second.AppID).stdout)
	golden(t, n, "admin-app.json", e.ok("admin", "app", appID, "--json").stdout)
	golden(t, n, "admin-suspend", e.ok("admin", "suspend", appID, "--reason", "complaints").stdout)
	golden(t, n, "admin-reinstate", e.ok("admin", "reinstate", appID).stdout)
	golden(t, n, "admin-payout-account", e.ok("admin", "payout-account", appID, "--account-id", "acct_1TestCLI").stdout)
	golden(t, n, "admin-floor-cut", e.ok("admin", "floor-cut", "utilities", "--platform", "win", "--floor-cents", "30", "--reason", "promotion").stdout)

	// Money in: test-mode top-up, completed at once.
	top := e.ok("topup", "--amount-cents", "5000", "--complete")
	golden(t, n, "topup-complete", top.stdout)
	topJSON := e.ok("topup", "--amount-cents", "7500", "--complete", "--json")
	golden(t, n, "topup-complete.json", topJSON.stdout)
	docs := strings.Split(strings.TrimSpace(topJSON.stdout), "\n")
	require.Len(t, docs, 2, "one JSON document per answer: the top-up's, then the checkout's")
	golden(t, n, "topup-x402", e.ok("topup", "--amount-cents", "5000", "--x402").stdout)
	golden(t, n, "topup-x402.json", e.ok("topup", "--amount-cents", "5000", "--x402", "--json").stdout)
	open := e.ok("topup", "--amount-cents", "5000", "--open")
	require.Len(t, e.opened, 1)
	assert.Contains(t, open.stdout, e.opened[0], "the opened URL is printed too")
	assert.True(t, strings.HasPrefix(e.opened[0], srv.url+"/test/checkout/cs_"), e.opened[0])
	golden(t, n, "admin-adjust", e.ok("admin", "adjust", appID, "--amount-cents", "1200", "--note", "refund of ticket 4711", "--idempotency-key", "ticket-4711").stdout)
	// The same ticket again posts nothing new.
	e.ok("admin", "adjust", appID, "--amount-cents", "1200", "--note", "refund of ticket 4711", "--idempotency-key", "ticket-4711")

	// Campaigns.
	golden(t, n, "campaigns-create", e.ok("campaigns", "create", "--categories", "productivity,utilities", "--daily-budget-cents", "5000").stdout)
	cj := e.ok("campaigns", "create", "--categories", "productivity", "--daily-budget-cents", "2000", "--max-bid-cents", "500", "--json")
	golden(t, n, "campaigns-create.json", cj.stdout)
	var cmp xpromo.Campaign
	require.NoError(t, json.Unmarshal([]byte(cj.stdout), &cmp))
	golden(t, n, "campaigns-pause", e.ok("campaigns", "pause", cmp.CampaignID).stdout)
	golden(t, n, "campaigns-resume.json", e.ok("campaigns", "resume", cmp.CampaignID, "--json").stdout)
	golden(t, n, "campaigns-show", e.ok("campaigns", "show", cmp.CampaignID).stdout)
	golden(t, n, "campaigns-update", e.ok("campaigns", "update", cmp.CampaignID, "--daily-budget-cents", "3000", "--max-bid-cents", "650", "--categories", "utilities,productivity").stdout)
	golden(t, n, "campaigns-update-floor.json", e.ok("campaigns", "update", cmp.CampaignID, "--floor-price", "--json").stdout)
	// Every campaign, newest first (both were made at the server's fixed
	// instant, so their order is by id: compared as a set).
	var listed xpromo.CampaignPage
	require.NoError(t, json.Unmarshal([]byte(e.ok("campaigns", "list", "--json", "--limit", "1").stdout), &listed))
	require.Len(t, listed.Campaigns, 2, "read a page at a time")
	assert.Contains(t, []string{listed.Campaigns[0].CampaignID, listed.Campaigns[1].CampaignID}, cmp.CampaignID)
	assert.Nil(t, listed.NextCursor)
	table := e.ok("campaigns", "list", "--status", "throttled").stdout
	assert.Contains(t, table, "CAMPAIGN_ID")
	assert.Equal(t, 3, strings.Count(table, "\n"), "a header and two campaigns:\n%s", table)
	assert.Equal(t, "no campaigns\n", e.ok("campaigns", "list", "--status", "active").stdout)

	// Ledger in three formats, every page (one line a page).
	golden(t, n, "ledger", e.ok("ledger", "--limit", "1").stdout)
	golden(t, n, "ledger.csv", e.ok("ledger", "--format", "csv", "--limit", "1").stdout)
	lj := e.ok("ledger", "--json", "--limit", "1").stdout
	golden(t, n, "ledger.json", lj)
	var page xpromo.LedgerPage
	require.NoError(t, json.Unmarshal([]byte(lj), &page))
	assert.Len(t, page.Lines, 3, "two top-ups and one adjustment, read a page at a time")
	assert.Equal(t, "no ledger lines\n", e.ok("ledger", "--from", "2030-01-01").stdout)
	assert.Equal(t, "{\"lines\":[]}\n", e.ok("ledger", "--from", "2030-01-01", "--json").stdout)

	// Stats.
	golden(t, n, "stats", e.ok("stats", "--period", "last_7_days").stdout)
	golden(t, n, "stats.json", e.ok("stats", "--json").stdout)
	var daily xpromo.DailyStatsPage
	require.NoError(t, json.Unmarshal([]byte(e.ok("stats", "daily", "--from", "2026-01-01", "--to", "2026-01-03", "--json").stdout), &daily))
	assert.Equal(t, []string{"2026-01-01", "2026-01-02", "2026-01-03"}, []string{daily.Days[0].Day, daily.Days[1].Day, daily.Days[2].Day})
	dailyTable := e.ok("stats", "daily", "--from", "2026-01-01", "--to", "2026-01-03").stdout
	assert.Equal(t, 4, strings.Count(dailyTable, "\n"), "a header and three days:\n%s", dailyTable)
	assert.Contains(t, dailyTable, "pub.earned")
	e.fails(5, "date_range_too_long", "stats", "daily", "--from", "2024-01-01", "--to", "2026-01-01")

	// Payout: top-ups and adjustments are not withdrawable.
	e.fails(6, "below_minimum", "payout")

	golden(t, n, "admin-audit", e.ok("admin", "audit", "--limit", "3").stdout)
}

// TestJSONIsTheAPIAnswer: --json prints the server's body byte for byte.
func TestJSONIsTheAPIAnswer(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	for _, path := range []string{"/v1/rate-card", "/v1/network-stats"} {
		resp, err := http.Get(srv.url + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		cmd := strings.TrimPrefix(path, "/v1/")
		assert.Equal(t, string(body), e.ok(cmd, "--json").stdout, cmd)
	}
}

// TestPayout: a withdrawable balance (cash earnings of a cleared install)
// is paid out.
func TestPayout(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	n := e.normalizer()
	adv := e.register("advertiser", "Advertiser", "com.example.adv")
	pub := e.register("", "Publisher", "com.example.pub")
	e.ok("--profile", "advertiser", "topup", "--amount-cents", "20000", "--complete")

	// A cleared install, as the attribution flow posts it: the publisher
	// earns 10000 less the 0.3 take rate, in cash.
	clearInstall(t, srv, adv.appID, pub.appID, 10000, "ch_cli")
	golden(t, n, "payout", e.ok("payout").stdout)
	e.fails(6, "below_minimum", "payout") // nothing left
	clearInstall(t, srv, adv.appID, pub.appID, 10000, "ch_cli2")
	po := e.ok("payout", "--json").stdout
	golden(t, n, "payout.json", po)
	var p xpromo.PayoutResponse
	require.NoError(t, json.Unmarshal([]byte(po), &p))
	assert.Equal(t, int64(7000), p.AmountCents)
	golden(t, n, "payout-ledger.csv", e.ok("ledger", "--format", "csv").stdout)

	// Test mode's connected account: implicit and ready.
	onb := e.ok("payout-account", "onboard", "--open").stdout
	assert.Equal(t, "acct_test_"+pub.appID, field(onb, "account_id"))
	require.NotEmpty(t, e.opened)
	assert.Equal(t, field(onb, "onboarding_url"), e.opened[len(e.opened)-1])
	st := e.ok("payout-account", "status").stdout
	assert.Equal(t, "true", field(st, "payouts_enabled"))
	assert.Equal(t, "none", field(st, "requirements_due"))
}

// TestListsCommands: balance, payouts and admin apps read what the API
// answers (the publisher of TestPayout's flow, after one payout).
func TestListsCommands(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	adv := e.register("advertiser", "Advertiser", "com.example.adv")
	pub := e.register("", "Publisher", "com.example.pub")
	e.ok("--profile", "advertiser", "topup", "--amount-cents", "20000", "--complete")
	clearInstall(t, srv, adv.appID, pub.appID, 10000, "ch_l1")
	bal := e.ok("balance").stdout
	assert.Equal(t, "EUR 70.00", field(bal, "withdrawable"))
	assert.Equal(t, "EUR 70.00", field(bal, "wallet"))
	assert.Equal(t, "EUR 0.00", field(bal, "credits"))
	assert.Equal(t, "EUR 100.00", field(e.ok("--profile", "advertiser", "balance").stdout, "credits"), "top-ups (less the install charged) are not withdrawable")
	assert.Contains(t, e.ok("payouts").stdout, "no payouts")
	e.ok("payout")
	var page xpromo.PayoutPage
	require.NoError(t, json.Unmarshal([]byte(e.ok("payouts", "--json").stdout), &page))
	require.Len(t, page.Payouts, 1)
	assert.Equal(t, int64(7000), page.Payouts[0].AmountCents)
	assert.Equal(t, xpromo.PayoutSent, page.Payouts[0].Status)
	assert.Contains(t, e.ok("apps", "keys").stdout, pub.apiKey[:12]+"…")
	assert.NotContains(t, e.ok("apps", "keys").stdout, pub.apiKey)
	assert.Contains(t, e.ok("chains").stdout, "no chains")
	th := e.ok("thresholds").stdout
	for _, name := range []string{"live_cleared", "live_retention", "fraud_rate", "churn_retention", "canary_clicks", "upheld_complaints"} {
		assert.Contains(t, th, name)
	}
	assert.Contains(t, th, "too_few", "no claims yet: the fraud rate is not judged")
	var ths xpromo.Thresholds
	require.NoError(t, json.Unmarshal([]byte(e.ok("thresholds", "--json").stdout), &ths))
	assert.Equal(t, pub.appID, ths.AppID)
	assert.Len(t, ths.Thresholds, 6)
}

// clearInstall posts what a cleared install posts on the ledger: an escrow
// hold on the advertiser, then its clearing with cash earnings for the
// publisher. (The install flow itself is the attribution server's.)
func clearInstall(t *testing.T, srv *server, advertiser, publisher string, amount int64, chain string) {
	t.Helper()
	l := &ledger.Ledger{Store: srv.store, Now: srv.clock.Now}
	hold := ledger.Hold{ID: chain, Advertiser: advertiser, Publisher: publisher, Amount: amount, ChainID: chain}
	for _, build := range []func() (ledger.Operation, error){
		func() (ledger.Operation, error) { return ledger.EscrowHold("hold:"+chain, hold) },
		func() (ledger.Operation, error) { return ledger.Clear("clear:"+chain, hold, ledger.EarnCash) },
	} {
		op, err := build()
		require.NoError(t, err)
		_, err = l.Post(context.Background(), op)
		require.NoError(t, err)
	}
}

// TestRotateKey: the new key is saved and works; it is never printed in
// the table.
func TestRotateKey(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	old := e.register("", "Rotator", "com.example.rot")
	r := e.ok("apps", "rotate-key")
	cfg := readConfig(t, e.configPath())
	newKey := cfg.Profiles["default"].APIKey
	require.NotEqual(t, old.apiKey, newKey)
	assert.NotContains(t, r.stdout, newKey, "the new key is masked")
	assert.Contains(t, r.stdout, newKey[:12]+"…")
	assert.Equal(t, "2026-11-22T09:00:00Z", field(r.stdout, "previous_key_expires_at"))
	e.ok("apps", "score") // with the saved key
	e.vars["XPROMO_API_KEY"] = old.apiKey
	e.ok("apps", "score") // the old one still works for 24 hours
}

// TestWatch: `apps score --watch` follows the app until an operator
// approves it, printing each state change on stderr.
func TestWatch(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	app := e.register("", "Watched", "com.example.watched")

	// The approval comes after the watch has seen the app pending.
	polled := make(chan struct{})
	var once sync.Once
	e.transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && strings.HasSuffix(r.URL.Path, "/score") {
			once.Do(func() { close(polled) })
		}
		return resp, err
	})
	done := make(chan result)
	go func() { done <- e.run("apps", "score", "--watch", "--interval", "5ms") }()
	<-polled
	approver := newCLI(t, srv)
	approver.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	approver.ok("admin", "approve", app.appID)
	r := <-done
	require.Equal(t, 0, r.code, r)
	assert.Equal(t, "approved", field(r.stdout, "status"))
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	assert.Equal(t, "status pending, gate 0/5 checks passed, scoring job queued (gate_pending, reputation_pending)", lines[0])
	assert.Equal(t, "status approved, gate 0/5 checks passed, scoring job queued (gate_pending, reputation_pending)", lines[len(lines)-1])

	// --json prints the final score as the API sent it.
	var sc xpromo.Score
	require.NoError(t, json.Unmarshal([]byte(e.ok("apps", "score", "--watch", "--json").stdout), &sc))
	assert.Equal(t, xpromo.AppStatusApproved, sc.Status)

	// A progress bar on a terminal.
	e.terminal = true
	r = e.ok("apps", "score", "--watch")
	assert.Contains(t, r.stderr, "approved, scoring queued · gate checks")
}

// TestWatchTimeout: a watch that never sees a decision gives up.
func TestWatchTimeout(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.register("", "Pending", "com.example.pending")
	r := e.fails(1, "timeout", "apps", "score", "--watch", "--interval", "5ms", "--timeout", "30ms")
	assert.Contains(t, r.stderr, "still pending")

	// On a terminal the bar is cleared first: the error starts its own line
	// (fails looks for a line starting with "error: timeout: ").
	e.terminal = true
	e.fails(1, "timeout", "apps", "score", "--watch", "--interval", "5ms", "--timeout", "30ms")

	// Without --timeout, a watch still ends (30 minutes by default).
	assert.Contains(t, e.ok("apps", "score", "--help").stdout, `give up watching after this long (0: never; Ctrl-C stops) (default 30m0s)`)
}

// TestLedgerProgress: a ledger longer than a page draws a counter on a
// terminal's stderr, never on stdout, and only when stdout is elsewhere
// for streamed formats.
func TestLedgerProgress(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.register("", "Big", "com.example.big")
	for range 3 {
		e.ok("topup", "--amount-cents", "5000", "--complete")
	}
	e.terminal = true
	csvOut := e.ok("ledger", "--format", "csv", "--limit", "1")
	assert.Contains(t, csvOut.stderr, "ledger lines")
	assert.Equal(t, 4, strings.Count(csvOut.stdout, "\n"), "header and three lines:\n%s", csvOut.stdout)
	table := e.ok("ledger", "--limit", "1")
	assert.Contains(t, table.stderr, "ledger lines")
	one := e.ok("ledger") // one page: no progress
	assert.Empty(t, one.stderr)

	e.stdoutTTY = true // both on the terminal: the CSV stream is not drawn over
	assert.Empty(t, e.ok("ledger", "--format", "csv", "--limit", "1").stderr)
	e.terminal = false
	assert.Empty(t, e.ok("ledger", "--limit", "1").stderr)
}

// TestSDKKeys: `keys sdk new` writes the private key 0600 and prints its id
// and public key; `register` sends only the public half.
func TestSDKKeys(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.register("", "Signer", "com.example.signer")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "sdk.pem")
	r := e.ok("keys", "sdk", "new", "--out", keyFile)
	st, err := os.Stat(keyFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	data, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	priv, err := attribution.ParsePrivateKey(data)
	require.NoError(t, err)
	kp, err := attribution.KeyPairFromPrivate(priv)
	require.NoError(t, err)
	assert.Equal(t, kp.ID, field(r.stdout, "key_id"))
	assert.Equal(t, attribution.EncodePublicKey(kp.Public), field(r.stdout, "public_key"))
	assert.NotContains(t, r.stdout+r.stderr, "PRIVATE KEY")

	// Never overwritten.
	e.fails(1, "file", "keys", "sdk", "new", "--out", keyFile)
	after, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	assert.Equal(t, data, after)

	// --json names the same three things.
	var j map[string]string
	require.NoError(t, json.Unmarshal([]byte(e.ok("keys", "sdk", "new", "--out", filepath.Join(dir, "two.pem"), "--json").stdout), &j))
	assert.Equal(t, filepath.Join(dir, "two.pem"), j["private_key_file"])
	assert.True(t, strings.HasPrefix(j["key_id"], attribution.KeyIDPrefix))

	e.fails(2, "usage", "keys", "sdk", "register")
	e.fails(2, "usage", "keys", "sdk", "register", "--public-key", "not-a-key")

	n := e.normalizer()
	n.replace(kp.ID, "sk_"+strings.Repeat("K", 20))
	n.replace(attribution.EncodePublicKey(kp.Public), strings.Repeat("P", 43))
	golden(t, n, "keys-sdk-register", e.ok("keys", "sdk", "register", "--key-file", keyFile).stdout)
	list := e.ok("keys", "sdk", "list", "--json")
	var keys xpromo.SDKKeyList
	require.NoError(t, json.Unmarshal([]byte(list.stdout), &keys))
	require.Len(t, keys.Keys, 1)
	assert.Equal(t, kp.ID, keys.Keys[0].KeyID)
	assert.Equal(t, attribution.EncodePublicKey(kp.Public), keys.Keys[0].PublicKey)

	// Registering the same key again changes nothing.
	e.ok("keys", "sdk", "register", "--public-key", attribution.EncodePublicKey(kp.Public))
	golden(t, n, "keys-sdk-revoke", e.ok("keys", "sdk", "revoke", kp.ID).stdout)
	e.fails(6, "sdk_key_revoked", "keys", "sdk", "register", "--key-file", keyFile)
	e.fails(4, "not_found", "keys", "sdk", "revoke", "sk_AAAAAAAAAAAAAAAAAAAA")
	golden(t, n, "keys-sdk-list", e.ok("keys", "sdk", "list").stdout)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAppsShowUpdate: `apps show` reads the app's own record; `apps update`
// sets and removes its appcast URL, a change printing its scoring job.
func TestAppsShowUpdate(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	n := e.normalizer()
	reg := e.ok("apps", "register", "--name", "Clipboard Pro", "--platform", "win", "--bundle-id", "com.example.clipboardpro",
		"--domain", "example.com", "--download-url", "https://example.com/ClipboardPro.exe", "--contact-email", "team@example.com")
	appID := appIDRe.FindStringSubmatch(reg.stdout)[1]
	other := e.register("other", "Other", "com.example.other")

	golden(t, n, "apps-show", e.ok("apps", "show").stdout)
	golden(t, n, "apps-update", e.ok("apps", "update", "--appcast-url", "https://appcast.example.com/win/clipboardpro.xml").stdout)
	again := e.ok("apps", "update", "--appcast-url", "https://appcast.example.com/win/clipboardpro.xml")
	assert.Equal(t, "-", field(again.stdout, "scoring_job_id"), "the same URL changes nothing")
	assert.Equal(t, "https://appcast.example.com/win/clipboardpro.xml", field(e.ok("apps", "show").stdout, "appcast_url"))

	var upd xpromo.AppUpdate
	require.NoError(t, json.Unmarshal([]byte(e.ok("apps", "update", "--clear-appcast-url", "--json").stdout), &upd))
	assert.Nil(t, upd.AppcastURL)
	require.NotNil(t, upd.ScoringJobID)
	assert.Equal(t, appID, upd.AppID)
	var app xpromo.App
	require.NoError(t, json.Unmarshal([]byte(e.ok("apps", "show", "--json").stdout), &app))
	assert.Nil(t, app.AppcastURL)

	e.fails(2, "usage", "apps", "update")
	e.fails(2, "usage", "apps", "update", "--appcast-url", "https://example.com/a.xml", "--clear-appcast-url")
	e.fails(5, "invalid_appcast_url", "apps", "update", "--appcast-url", "ftp://example.com/a.xml")
	e.fails(4, "not_found", "apps", "show", "--app-id", other.appID)
	e.fails(4, "not_found", "apps", "update", "--app-id", other.appID, "--clear-appcast-url")
}
