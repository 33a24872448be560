package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

const adminToken = "desktop-app-test-admin-token"

// startServer runs the real server (server/assembly on a fresh SQLite store,
// test mode, its default rate limits and real clock, its job runner, so the
// vetting gate decides) behind httptest, as `make demo` runs xpromo-server.
func startServer(t *testing.T, cfg assembly.Config) string {
	t.Helper()
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	if cfg.Mode == "" {
		cfg.Mode = httpapi.ModeTest
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = adminToken
	}
	cfg.BaseURL = ts.URL
	srv, err := assembly.Build(cfg, storagetest.SQLite(t))
	require.NoError(t, err)
	handler = srv.HTTP
	runJobs(t, srv)
	return ts.URL
}

// env is a fixed environment.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestStory plays the whole story in-process against the real server and
// checks what it produced exactly: the cleared chain, both ledgers with the
// arithmetic of decisions §3, and the two signatures. Then it shows that
// the checks catch ledgers that do not add up.
func TestStory(t *testing.T) {
	url := startServer(t, assembly.Config{})
	var out, log bytes.Buffer
	res, err := playStory(context.Background(), config{
		BaseURL: url, AdminToken: adminToken, Category: "productivity", Dir: t.TempDir(), Out: &out, Log: &log,
	})
	require.NoError(t, err, "narration:\n%s\nSDK log:\n%s", &out, &log)
	assert.Empty(t, log.String(), "the SDK warned")

	pub, adv, c := res.Publisher, res.Advertiser, res.Chain
	const price = 400 // productivity's floor on mac
	assert.Equal(t, xpromo.ChainCleared, c.State)
	assert.Equal(t, int64(price), c.PriceCents)
	assert.Equal(t, pub.ID, c.PublisherAppID)
	assert.Equal(t, adv.ID, c.AdvertiserAppID)
	assert.Equal(t, res.Campaign.CampaignID, c.CampaignID)
	require.NotNil(t, c.Countersignature)

	type row struct {
		Type         xpromo.LineType
		Amount       int64
		BalanceAfter int64
		Counterparty string
		Chain        string
	}
	rows := func(ls []xpromo.LedgerLine) []row {
		var out []row
		for _, l := range ls {
			r := row{Type: l.Type, Amount: l.AmountCents, BalanceAfter: l.BalanceAfter}
			if l.CounterpartyAppID != nil {
				r.Counterparty = *l.CounterpartyAppID
			}
			if l.EventChainID != nil {
				r.Chain = *l.EventChainID
			}
			out = append(out, r)
		}
		return out
	}
	assert.Equal(t, []row{
		{xpromo.LineTopup, topUpCents, topUpCents, "", ""},
		{xpromo.LineEscrowHold, -price, topUpCents - price, pub.ID, c.ChainID},
		{xpromo.LineEscrowRelease, price, topUpCents, pub.ID, c.ChainID},
		{xpromo.LineCharge, -price, topUpCents - price, pub.ID, c.ChainID},
	}, rows(adv.Ledger))
	assert.Equal(t, []row{{xpromo.LineEarn, 280, 280, adv.ID, c.ChainID}}, rows(pub.Ledger), "400 less the 30 % take")
	assert.Equal(t, int64(1), adv.Stats.Cleared)

	checks := checkOutcome(res)
	for _, ch := range checks {
		assert.NoError(t, ch.Err, ch.Name)
	}
	narration := out.String()
	for _, want := range []string{
		"showing slot onboarding_complete… (the fill request signed with key sk_",
		"│ Sponsored",
		"[ Download ]",
		"xpromo_click=",
		"found the click token through the inbox channel",
		"chain " + c.ChainID + " is installed",
		"chain activated_48h",
		"chain " + c.ChainID + " is cleared",
	} {
		assert.Contains(t, narration, want)
	}

	// The checks fail on an outcome that does not add up.
	failing := func(mutate func(o *outcome)) []string {
		o := *res
		p, a := *res.Publisher, *res.Advertiser
		p.Ledger, a.Ledger = slices.Clone(p.Ledger), slices.Clone(a.Ledger)
		o.Publisher, o.Advertiser = &p, &a
		mutate(&o)
		var names []string
		for _, ch := range checkOutcome(&o) {
			if ch.Err != nil {
				names = append(names, ch.Name)
			}
		}
		return names
	}
	assert.Empty(t, failing(func(*outcome) {}))
	got := failing(func(o *outcome) { o.Publisher.Ledger[0].AmountCents = 400 })
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "publisher: earn")
	got = failing(func(o *outcome) { o.Advertiser.Ledger = o.Advertiser.Ledger[:3] })
	require.Len(t, got, 2, "%q", got)
	assert.Contains(t, got[0], "advertiser: escrow_hold")
	assert.Contains(t, got[1], "balances")
	got = failing(func(o *outcome) { o.Chain.State = xpromo.ChainRefunded })
	assert.Equal(t, []string{"the install is cleared"}, got)
	got = failing(func(o *outcome) { o.Chain.ClickToken = strings.Replace(o.Chain.ClickToken, ".", ".e30", 1) })
	assert.Len(t, got, 2, "neither signature holds without the click token: %q", got)
	got = failing(func(o *outcome) { o.Advertiser.Registered = o.Publisher.Registered })
	assert.Equal(t, []string{"the install countersignature verifies with the advertiser's registered SDK key"}, got)
}

// TestRun runs the program as `make demo` does (configuration from the
// environment): exit 0 and the full report. Run twice against one server,
// the story still holds: each run pauses its campaign.
func TestRun(t *testing.T) {
	url := startServer(t, assembly.Config{})
	for i := range 2 {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--wait", "10s"}, env(map[string]string{
			"XPROMO_BASE_URL": url + "/", "XPROMO_ADMIN_TOKEN": adminToken,
		}), &stdout, &stderr)
		require.Equal(t, exitOK, code, "run %d\nstdout:\n%s\nstderr:\n%s", i, &stdout, &stderr)
		out := stdout.String()
		for _, want := range []string{
			"== Ledgers (amounts in euro cents)",
			"Snip, the advertiser",
			"Clipboard Pro, the publisher",
			"escrow_release",
			"== Stats",
			"click token, signed by Clipboard Pro's SDK",
			"install countersignature, signed by Snip's SDK",
			"ok   publisher: earn +(P - P×30/100) = 280 cents with the advertiser",
			"EUR 4.00 charged to Snip, EUR 2.80 earned by Clipboard Pro",
		} {
			assert.Contains(t, out, want)
		}
		assert.NotContains(t, out, "FAIL")
	}
}

// TestRunFails: a story that cannot finish exits 1 and says why.
func TestRunFails(t *testing.T) {
	url := startServer(t, assembly.Config{})
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--base-url", url, "--admin-token", "wrong"}, env(nil), &stdout, &stderr)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr.String(), "unauthorized")

	stdout.Reset()
	stderr.Reset()
	code = run(context.Background(), []string{"--base-url", url, "--admin-token", adminToken, "--category", "no-such-category"}, env(nil), &stdout, &stderr)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr.String(), "unknown_category")
}

func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	cfg, err := parseFlags([]string{"--base-url", "http://flag:1/"}, env(map[string]string{
		"XPROMO_BASE_URL": "http://env:2", "XPROMO_ADMIN_TOKEN": "from-env",
	}), &stderr)
	require.NoError(t, err)
	assert.Equal(t, "http://flag:1", cfg.BaseURL, "the flag wins over the environment")
	assert.Equal(t, "from-env", cfg.AdminToken)
	assert.Equal(t, "productivity", cfg.Category)

	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"XPROMO_ADMIN_TOKEN": "t"}, "--base-url or XPROMO_BASE_URL"},
		{[]string{"--base-url", "ftp://x"}, map[string]string{"XPROMO_ADMIN_TOKEN": "t"}, "not an http(s) URL"},
		{[]string{"--base-url", "http://x"}, nil, "--admin-token or XPROMO_ADMIN_TOKEN"},
		{[]string{"--base-url", "http://x", "--admin-token", "t", "extra"}, nil, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), c.args, env(c.env), &stdout, &stderr)
		assert.Equal(t, exitUsage, code, "%v", c.args)
		assert.Contains(t, stderr.String(), c.want)
	}
}

// TestStoryWithWebhooks plays the story with a receiver on this machine,
// as `make demo` does: the server's webhook worker runs (loopback allowed,
// test mode only), both apps register endpoints, and the receiver (here a
// stand-in printing what examples/webhook-receiver prints, verified with
// sdk/webhook and the secrets file) gets each step's webhooks in order.
func TestStoryWithWebhooks(t *testing.T) {
	var handler http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	srv, err := assembly.Build(assembly.Config{Mode: httpapi.ModeTest, AdminToken: adminToken, BaseURL: ts.URL, WebhooksAllowLoopback: true}, storagetest.SQLite(t))
	require.NoError(t, err)
	handler = srv.HTTP
	runJobs(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.RunWebhooks(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	dir := t.TempDir()
	secrets, logPath := filepath.Join(dir, "secrets"), filepath.Join(dir, "receiver.log")
	require.NoError(t, os.WriteFile(logPath, nil, 0o600))
	var mu sync.Mutex
	seen := map[string]bool{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := os.ReadFile(secrets)
		v, err := webhook.NewVerifier(strings.Fields(string(raw))...)
		if err != nil {
			http.Error(w, "no secret yet", http.StatusServiceUnavailable)
			return
		}
		v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			id := r.Header.Get(webhook.HeaderID)
			mu.Lock()
			defer mu.Unlock()
			if !seen[id] {
				seen[id] = true
				require.NoError(t, appendLine(logPath, id+" "+string(body)))
			}
			w.WriteHeader(http.StatusNoContent)
		})).ServeHTTP(w, r)
	}))
	t.Cleanup(rcv.Close)

	var out, log bytes.Buffer
	res, err := playStory(ctx, config{
		BaseURL: ts.URL, AdminToken: adminToken, Category: "productivity", Dir: t.TempDir(), Out: &out, Log: &log,
		WebhookURL: rcv.URL + "/webhooks", WebhookSecrets: secrets, WebhookLog: logPath,
	})
	require.NoError(t, err, "narration:\n%s\nSDK log:\n%s", &out, &log)
	for _, ch := range checkOutcome(res) {
		assert.NoError(t, ch.Err, ch.Name)
	}
	assert.Contains(t, out.String(), "chain.state_changed + chain.cleared (cleared) → both apps' endpoints")
	info, err := os.Stat(secrets)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// The check catches webhooks missing or out of order.
	o := *res
	o.Webhooks = slices.DeleteFunc(slices.Clone(res.Webhooks), func(r received) bool {
		return r.Chain.Chain.State == xpromo.ChainActivated48h && r.Event.AppID == res.Publisher.ID
	})
	assert.Error(t, checkWebhooks(&o))
	o.Webhooks = slices.Clone(res.Webhooks)
	slices.Reverse(o.Webhooks)
	assert.Error(t, checkWebhooks(&o))
}

// runJobs runs srv's job queue (the vetting gate) until the test ends.
func runJobs(t *testing.T, srv *assembly.Server) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.RunJobs(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}
