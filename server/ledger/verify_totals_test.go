package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/ledger"
)

// Verify compares each wallet's kept totals (what payouts and balances
// read) with its lines, and names a wallet whose totals drifted.
func TestVerifyReportsWalletTotalsThatDiffer(t *testing.T) {
	ctx := context.Background()
	m := newMemLedger()
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	top, err := ledger.TopUp("topup:adv", "adv", 10_000, "test")
	if err != nil {
		t.Fatal(err)
	}
	h := ledger.Hold{ID: "hold_1", Advertiser: "adv", Publisher: "pub", Amount: 500, ChainID: "chn_1"}
	hold, err := ledger.EscrowHold("hold:1", h)
	if err != nil {
		t.Fatal(err)
	}
	clear, err := ledger.Clear("clear:1", h, ledger.EarnCash)
	if err != nil {
		t.Fatal(err)
	}
	if _, errs, err := ledger.Apply(ctx, m, at, []ledger.Operation{top, hold, clear}); err != nil || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatal(err, errs)
	}
	if rep, err := ledger.Verify(ctx, m); err != nil || !rep.OK() {
		t.Fatalf("totals that match: %v %+v", err, rep)
	}

	m.totalsSkew = 1
	rep, err := ledger.Verify(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, v := range rep.Violations {
		if v.Check != "wallet_totals" {
			t.Fatalf("unexpected violation %+v", v)
		}
		got[v.Subject] = true
	}
	if !got[ledger.Wallet("adv")] || !got[ledger.Wallet("pub")] || len(got) != 2 {
		t.Fatalf("want both wallets named, got %+v", rep.Violations)
	}
}
