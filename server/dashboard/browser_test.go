package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/internal/browsertest"
	"github.com/xpromo/xpromo/server/sqlite"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// euros is how the dashboard writes an amount.
func euros(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("EUR %s%d.%02d", sign, cents/100, cents%100)
}

// TestBrowser walks the dashboard in headless chromium on a test-mode
// server whose data was made through the SDK (two approved apps, a top-up,
// a campaign, three installs of which two were used past 48 hours and
// cleared, one pending app): sign-in with a pasted key, each screen of the
// app's role, what each shows against what the API answers for the same
// figures, a top-up through the form and the test checkout. On every
// screen: no console error, no CSP violation, no serious or critical axe
// violation, and a screenshot (make screenshots keeps them in
// docs/dashboard).
func TestBrowser(t *testing.T) {
	b := browsertest.Start(t)
	storagetest.Each(t, func(t *testing.T, store storage.Store) {
		// One set of screenshots: SQLite's.
		_, isSQLite := store.(*sqlite.DB)
		walk(t, b, browsertest.Serve(t, store), isSQLite)
	})
}

func walk(t *testing.T, b *browsertest.Browser, srv *browsertest.Server, shots bool) {
	ctx := context.Background()
	screenshot := func(p *browsertest.Page, name string) {
		if shots {
			p.Screenshot(name)
		}
	}
	const category = "productivity"

	adv := srv.ApprovedApp("Snip", "")
	pub := srv.ApprovedApp("Clipboard", category)
	quiet := srv.PendingApp("Quiet", "")
	srv.TopUp(adv, 20_000)
	srv.Campaign(adv, category, 5_000)
	var installs []browsertest.Install
	for _, d := range []string{"dev-1", "dev-2", "dev-3"} {
		installs = append(installs, srv.Install(pub, adv, d))
	}
	srv.Advance(48 * time.Hour)
	srv.Heartbeat(adv, installs[0])
	srv.Heartbeat(adv, installs[1])
	srv.Advance(time.Hour)
	sweep := srv.Sweep()
	require.Equal(t, 2, sweep.Cleared, "%+v", sweep)

	p := b.NewPage(t)
	// A person opening the server's root lands on the sign-in form.
	p.Open(srv.URL + "/")
	assert.Equal(t, srv.URL+"/dashboard/sign-in", p.Location())
	p.Check("sign-in")
	screenshot(p, "sign-in")

	p.Fill("#key", adv.Key)
	p.ClickAndWait(`main form button[type="submit"]`)
	assert.Equal(t, srv.URL+"/dashboard/", p.Location())
	assert.Equal(t, "Snip", p.Text("main h1"))
	score, err := adv.Client.GetScore(ctx, adv.ID)
	require.NoError(t, err)
	assert.Equal(t, string(score.Status), p.Text(".status"))
	bal, err := adv.Client.GetBalance(ctx, adv.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{euros(bal.WalletCents), euros(bal.EscrowHeldCents), euros(bal.WithdrawableCents), euros(bal.CreditsCents)},
		p.Texts(".balance dd"), "the overview's balance is the API's")
	assert.Contains(t, p.Text(".test-banner"), "TEST MODE")
	p.Check("overview")
	screenshot(p, "overview")

	// Installs: the chains the API lists for the app, with their states.
	p.ClickAndWait(`nav a[href="/dashboard/installs"]`)
	chains, err := adv.Client.ListChains(ctx, nil)
	require.NoError(t, err)
	require.Len(t, chains.Chains, 3)
	var wantStates []string
	for _, c := range chains.Chains {
		wantStates = append(wantStates, string(c.State))
	}
	assert.Equal(t, wantStates, p.Texts("table.list tbody .state"))
	p.Check("installs")
	screenshot(p, "installs")

	// A cleared chain's detail: both signatures verify.
	p.Open(srv.URL + "/dashboard/installs/" + installs[0].ChainID)
	assert.Equal(t, "cleared", p.Text(".facts .state"))
	sigs := p.Texts(".signatures > li > strong")
	assert.Equal(t, []string{"✓ verifies", "✓ verifies"}, sigs)
	p.Check("chain")
	screenshot(p, "chain")

	// Money: every ledger line the API lists, and the balance after each.
	p.ClickAndWait(`nav a[href="/dashboard/money"]`)
	lines, err := adv.Client.GetLedger(ctx, adv.ID, nil)
	require.NoError(t, err)
	assert.Equal(t, len(lines.Lines), p.Count("table.list tbody tr"))
	var wantAfter []string
	for _, l := range lines.Lines {
		wantAfter = append(wantAfter, fmt.Sprint(l.BalanceAfter))
	}
	assert.Equal(t, wantAfter, p.Texts("table.list tbody td:nth-child(4)"), "balance after, line by line")
	assert.Equal(t, euros(bal.WalletCents), p.Texts(".balance dd")[0])
	p.Check("money")
	screenshot(p, "money")

	// A top-up through the form: the test checkout, paid, credits the
	// wallet by exactly that amount, as one topup line.
	p.Fill("#amount_eur", "60")
	p.ClickAndWait(`form[action="/dashboard/money/top-up"] button[type="submit"]`)
	require.True(t, strings.HasPrefix(p.Location(), srv.URL+"/test/checkout/"), "%s: %s", p.Location(), p.Text("body"))
	p.ClickAndWait(`form button[type="submit"]`)
	assert.Empty(t, p.Problems(), "the test checkout")
	after, err := adv.Client.GetBalance(ctx, adv.ID)
	require.NoError(t, err)
	assert.Equal(t, bal.WalletCents+6000, after.WalletCents)
	p.Open(srv.URL + "/dashboard/money")
	assert.Equal(t, euros(after.WalletCents), p.Texts(".balance dd")[0])
	last, err := adv.Client.GetLedger(ctx, adv.ID, nil)
	require.NoError(t, err)
	require.Len(t, last.Lines, len(lines.Lines)+1)
	assert.Equal(t, xpromo.LineTopup, last.Lines[len(last.Lines)-1].Type)
	assert.Equal(t, int64(6000), last.Lines[len(last.Lines)-1].AmountCents)
	p.Check("money after a top-up")

	// Campaigns: spend today against the budget, as the API reads it.
	p.ClickAndWait(`nav a[href="/dashboard/campaigns"]`)
	camps, err := adv.Client.ListCampaigns(ctx, nil)
	require.NoError(t, err)
	require.Len(t, camps.Campaigns, 1)
	c := camps.Campaigns[0]
	assert.Contains(t, p.Text("table.list tbody tr"), euros(c.SpentTodayCents)+" of "+euros(c.DailyBudgetCents))
	p.Check("campaigns")
	screenshot(p, "campaigns")

	// Score: the status and the five gate checks, as GET /score reads them.
	p.ClickAndWait(`nav a[href="/dashboard/score"]`)
	assert.Contains(t, p.Text("main p"), string(score.Status))
	assert.Len(t, p.Texts("section[aria-labelledby=gate] tbody tr"), 5)
	p.Check("score")
	screenshot(p, "score")

	// Developers: the API keys (prefixes only) and the SDK key.
	p.ClickAndWait(`nav a[href="/dashboard/developers"]`)
	assert.Contains(t, p.Text("main"), adv.Key[:12])
	assert.NotContains(t, p.Text("main"), adv.Key)
	assert.Contains(t, p.Text("main"), adv.SDK.ID)
	p.Check("developers")
	screenshot(p, "developers")

	// Sign-in with a single-use link (what xpromo dashboard --open
	// opens), in a browser of its own: the GET only asks to continue, the
	// Continue POST signs in, and the link then no longer works.
	link, err := pub.Client.DashboardLink(ctx)
	require.NoError(t, err)
	l := b.NewPage(t)
	l.Open(link.URL)
	l.Check("sign-in link")
	screenshot(l, "sign-in-link")
	l.ClickAndWait(`main form button[type="submit"]`)
	assert.Equal(t, srv.URL+"/dashboard/", l.Location())
	assert.Equal(t, "Clipboard", l.Text("main h1"))
	pubBal, err := pub.Client.GetBalance(ctx, pub.ID)
	require.NoError(t, err)
	assert.Equal(t, euros(pubBal.WithdrawableCents), l.Texts(".balance dd")[2], "the publisher's cleared earnings are withdrawable")
	l.Check("the publisher's overview")
	again := b.NewPage(t)
	again.Open(link.URL)
	again.ClickAndWait(`main form button[type="submit"]`)
	assert.NotEqual(t, srv.URL+"/dashboard/", again.Location(), "a used link signs nobody in")
	assert.Contains(t, again.Text("main"), "used already")
	again.Problems() // the refusal's status is a 4xx, which the browser logs

	operator(t, b, srv, adv, pub, quiet, screenshot)
}

// operator walks the operators' screens: the review queue lists what the
// API's review queue lists, an operator approves the pending app from its
// page and resolves a complaint, and the API then says so.
func operator(t *testing.T, b *browsertest.Browser, srv *browsertest.Server, adv, pub, quiet *browsertest.App, screenshot func(*browsertest.Page, string)) {
	ctx := context.Background()
	complaint, err := adv.Client.FileComplaint(ctx, adv.ID, &xpromo.CreateComplaintRequest{AppID: pub.ID, Reason: xpromo.ComplaintMisleadingAd, Detail: "the ad promised a free plan"})
	require.NoError(t, err)

	op := b.NewPage(t)
	op.Open(srv.URL + "/dashboard/sign-in")
	op.Fill("#key", browsertest.AdminToken)
	op.ClickAndWait(`main form button[type="submit"]`)
	assert.Equal(t, srv.URL+"/dashboard/operator/review", op.Location())
	queue, err := srv.Admin.AdminListApps(ctx, &xpromo.AdminAppListParams{Status: xpromo.AppStatusPending})
	require.NoError(t, err)
	var want []string
	for _, a := range queue.Apps {
		want = append(want, a.AppID)
	}
	assert.Equal(t, []string{quiet.ID}, want)
	assert.Equal(t, want, op.Texts("table.list tbody td:first-child code"), "the review queue is the API's")
	op.Check("review queue")
	screenshot(op, "review")

	op.ClickAndWait(`a[href="/dashboard/operator/apps/` + quiet.ID + `"]`)
	op.Check("operator app")
	screenshot(op, "operator-app")
	op.Fill("#reason-approve", "checked by hand")
	op.ClickAndWait(`form.decision:has(input[name="action"][value="approve"]) button[type="submit"]`)
	op.Check("operator app after approval")
	got, err := srv.Admin.AdminGetApp(ctx, quiet.ID)
	require.NoError(t, err)
	assert.Equal(t, xpromo.AppStatusApproved, got.Status, "approved from the browser")
	audit, err := srv.Admin.AdminAudit(ctx, 1)
	require.NoError(t, err)
	require.NotEmpty(t, audit.Entries)
	assert.Equal(t, []string{quiet.ID, "app.approve"}, []string{audit.Entries[0].Subject, audit.Entries[0].Action}, "the approval is audited")

	op.ClickAndWait(`nav a[href="/dashboard/operator/complaints"]`)
	op.Check("complaints")
	screenshot(op, "complaints")
	op.Do(chromedp.SetValue(chromedp.CSS("#res-"+complaint.ComplaintID), "upheld"))
	op.Fill("#note-"+complaint.ComplaintID, "the plan is paid")
	op.ClickAndWait(`form[action="/dashboard/operator/complaints/` + complaint.ComplaintID + `/resolve"] button[type="submit"]`)
	op.Check("complaints after resolving")
	resolved, err := srv.Admin.AdminComplaints(ctx, xpromo.ComplaintUpheld, 10)
	require.NoError(t, err)
	require.Len(t, resolved.Complaints, 1)
	assert.Equal(t, complaint.ComplaintID, resolved.Complaints[0].ComplaintID)

	op.ClickAndWait(`nav a[href="/dashboard/operator/audit"]`)
	assert.Contains(t, op.Text("main"), complaint.ComplaintID, "the resolution is in the audit log")
	op.Check("audit")
	screenshot(op, "audit")
	op.ClickAndWait(`nav a[href="/dashboard/operator/network"]`)
	op.Check("network")
	screenshot(op, "network")
}
