package conformance

import (
	"net/http"
	"strings"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The dashboard's reads (additive; docs/dashboard.md "API"): the balance
// as the ledger sums it, the chains list on each side, the API key list.
func listChecks() []Check {
	return []Check{
		{"the balance of a funded app: its top-up is credits, not withdrawable (additive)", checkBalanceOfTopUp},
		{"an install holds its price in escrow and lists on both sides (additive)", checkChainsAndEscrow},
		{"the API key list shows the key's prefix, never the key (additive)", checkAPIKeyList},
		{"a new app's lifecycle thresholds: the go-live bar not met, no suspension bar crossed (additive)", checkThresholdsOfNewApp},
	}
}

func checkBalanceOfTopUp(c *C) {
	a := fundedApp(c, 7500)
	b, err := a.Client.GetBalance(c.Ctx(), a.ID)
	c.NoError(err, "GET /apps/{app_id}/balance")
	requireKeys(c, "Balance", c.Last().JSON(c), "wallet_cents", "escrow_held_cents", "withdrawable_cents", "credits_cents", "min_payout_cents", "payout_pending", "as_of")
	lines := c.Lines(a, nil)
	if b.WalletCents != lines[len(lines)-1].BalanceAfter || b.WalletCents != 7500 {
		c.Errorf("wallet_cents %d, want the ledger's last balance_after (7500)", b.WalletCents)
	}
	if b.WithdrawableCents != 0 || b.CreditsCents != 7500 || b.EscrowHeldCents != 0 || b.PayoutPending {
		c.Errorf("balance %+v: a top-up is spendable credits, not withdrawable", b)
	}
	if b.MinPayoutCents != xpromo.MinPayoutCents || b.Currency != "EUR" {
		c.Errorf("min_payout_cents %d, currency %q", b.MinPayoutCents, b.Currency)
	}
	// That another app's balance answers 404 is not checked here: the auth
	// area owns "another app's resources answer 404" (the self-test breaks
	// that rule and wants exactly the auth area to fail); the server's own
	// contract test checks it for the balance (server/assembly, contractLists in TestContract).
}

func checkChainsAndEscrow(c *C) {
	m := c.NewMarket("", 10000)
	in := c.Installed(m.Pub, m.Adv)
	b, err := m.Adv.Client.GetBalance(c.Ctx(), m.Adv.ID)
	c.NoError(err, "the advertiser's balance")
	if b.EscrowHeldCents != in.Offer.PriceCents || b.WalletCents != 10000-in.Offer.PriceCents {
		c.Errorf("after an install at %d: escrow_held_cents %d, wallet_cents %d", in.Offer.PriceCents, b.EscrowHeldCents, b.WalletCents)
	}
	for _, side := range []struct {
		app  *SDKApp
		role xpromo.ChainRole
	}{{m.Adv, xpromo.RoleAdvertiser}, {m.Pub, xpromo.RolePublisher}} {
		page, err := side.app.Client.ListChains(c.Ctx(), &xpromo.ChainListParams{Role: side.role, State: xpromo.ChainInstalled})
		c.NoError(err, "GET /chains?role="+string(side.role))
		if len(page.Chains) != 1 || page.Chains[0].ChainID != in.ChainID {
			c.Errorf("the %s's installed chains: %+v, want the chain %s", side.role, page.Chains, in.ChainID)
			continue
		}
		if page.Chains[0].Countersignature == nil || page.Chains[0].ClickToken != in.Token {
			c.Errorf("a listed chain carries both signatures: %+v", page.Chains[0])
		}
	}
	wrong, err := m.Pub.Client.ListChains(c.Ctx(), &xpromo.ChainListParams{Role: xpromo.RoleAdvertiser})
	c.NoError(err, "GET /chains?role=advertiser for the publisher")
	if len(wrong.Chains) != 0 {
		c.Errorf("the publisher lists %d chains as an advertiser, want 0", len(wrong.Chains))
	}
	_, err = m.Pub.Client.ListChains(c.Ctx(), &xpromo.ChainListParams{Role: "both"})
	c.ExpectError(err, http.StatusUnprocessableEntity, "invalid_role", "role=both")
}

func checkAPIKeyList(c *C) {
	a := c.NewApp()
	l, err := a.Client.ListAPIKeys(c.Ctx(), a.ID)
	c.NoError(err, "GET /apps/{app_id}/keys")
	if len(l.Keys) != 1 || l.Keys[0].Prefix != a.Key[:12] || l.Keys[0].ExpiresAt != nil || !l.Keys[0].Active {
		c.Errorf("a new app's keys: %+v, want one active key %q… without expiry", l.Keys, a.Key[:12])
	}
	if strings.Contains(string(c.Last().Body), a.Key) {
		c.Errorf("the key list holds the key itself")
	}
}

// checkThresholdsOfNewApp: a new app has traded nothing, so it is below the
// go-live bar, clear of the count bars, and too few claims and installs to
// judge its rates.
func checkThresholdsOfNewApp(c *C) {
	a := c.NewApp()
	th, err := a.Client.GetThresholds(c.Ctx(), a.ID)
	c.NoError(err, "GET /apps/{app_id}/thresholds")
	requireKeys(c, "Thresholds", c.Last().JSON(c), "app_id", "status", "as_of", "thresholds")
	if th.AppID != a.ID {
		c.Errorf("app_id %q, want %q", th.AppID, a.ID)
	}
	want := []struct {
		name  xpromo.ThresholdName
		kind  xpromo.ThresholdKind
		state xpromo.ThresholdState
	}{
		{xpromo.ThresholdLiveCleared, xpromo.ThresholdKindLive, xpromo.ThresholdNotMet},
		{xpromo.ThresholdLiveRetention, xpromo.ThresholdKindLive, xpromo.ThresholdNotMet},
		{xpromo.ThresholdFraudRate, xpromo.ThresholdKindSuspension, xpromo.ThresholdTooFew},
		{xpromo.ThresholdChurnRetention, xpromo.ThresholdKindSuspension, xpromo.ThresholdTooFew},
		{xpromo.ThresholdCanaryClicks, xpromo.ThresholdKindSuspension, xpromo.ThresholdWithin},
		{xpromo.ThresholdUpheldComplaints, xpromo.ThresholdKindSuspension, xpromo.ThresholdWithin},
	}
	if len(th.Thresholds) != len(want) {
		c.Errorf("%d thresholds, want %d: %+v", len(th.Thresholds), len(want), th.Thresholds)
		return
	}
	for i, w := range want {
		got := th.Thresholds[i]
		if got.Name != w.name || got.Kind != w.kind || got.State != w.state || got.Value != 0 || got.Bar <= 0 || got.Reason == "" {
			c.Errorf("threshold %d: %+v, want %s (%s) %s at value 0 against a positive bar, with its reason code", i, got, w.name, w.kind, w.state)
		}
	}
}
