package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
)

var ctx = context.Background()

func testTopUpAndRead(t *testing.T, h Harness) {
	l, clk := newLedger(h)
	p := poster(t, l)
	op, err := ledger.TopUp("topup:cs_1", "app_a", 5000, "checkout cs_1")
	r := p(op, err)
	require.False(t, r.Replayed)
	require.Len(t, r.Lines, 2)
	line, ok := r.Line(ledger.Wallet("app_a"))
	require.True(t, ok)
	assert.Equal(t, int64(5000), line.BalanceAfter)
	assert.Equal(t, int64(1), line.Seq)
	assert.Equal(t, clk.Now(), line.CreatedAt)
	assert.Equal(t, ledger.GenesisHash, line.PrevHash)

	clk.Advance(time.Hour)
	op, err = ledger.TopUp("topup:cs_2", "app_a", 7000, "checkout cs_2")
	p(op, err)

	assert.Equal(t, []view{
		{ledger.TypeTopup, 5000, 5000, "", ""},
		{ledger.TypeTopup, 7000, 12000, "", ""},
	}, walletView(t, h.Store, "app_a"))

	lines := must(h.Store.Lines(ctx, ledger.Wallet("app_a"), ledger.LineQuery{}))
	assert.Equal(t, "checkout cs_2", lines[1].Note)
	assert.Equal(t, lines[0].Hash, lines[1].PrevHash, "each line links to the previous one")
	assert.True(t, lines[1].CreatedAt.Equal(clk.Now()), "times come from the injected clock")

	acct := must(h.Store.Account(ctx, ledger.Wallet("app_a")))
	assert.Equal(t, ledger.Account{ID: ledger.Wallet("app_a"), Balance: 12000, Seq: 2, Head: lines[1].Hash}, acct)
	none := must(h.Store.Account(ctx, ledger.Wallet("nobody")))
	assert.Equal(t, int64(0), none.Balance)
	assert.Equal(t, ledger.GenesisHash, none.Head)

	rep := verifyOK(t, h.Store)
	assert.Equal(t, 4, rep.Lines)
	assert.Equal(t, 2, rep.Operations)
}

func testIdempotentReplay(t *testing.T, h Harness) {
	l, clk := newLedger(h)
	p := poster(t, l)
	op, err := ledger.TopUp("topup:cs_1", "app_a", 5000, "")
	first := p(op, err)

	clk.Advance(time.Minute)
	again := p(op, nil)
	assert.True(t, again.Replayed)
	assert.Equal(t, first.Operation.ID, again.Operation.ID)
	assert.Equal(t, first.Lines, again.Lines, "a replay returns the first result, lines and all")

	other, err := ledger.TopUp("topup:cs_1", "app_a", 6000, "")
	require.NoError(t, err)
	_, err = l.Post(ctx, other)
	assert.Equal(t, apperr.OperationKeyReused, apperr.Code(err))

	assert.Len(t, walletView(t, h.Store, "app_a"), 1, "no second posting")
	verifyOK(t, h.Store)
}

func testInsufficientFunds(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	p, mk := poster(t, l), opOf(t)
	p(ledger.TopUp("t1", "adv", 100, ""))
	hold := ledger.Hold{ID: "ch_1", Advertiser: "adv", Publisher: "pub", Amount: 150, ChainID: "ch_1"}
	op, err := ledger.EscrowHold("hold:ch_1", hold)
	require.NoError(t, err)
	_, err = l.Post(ctx, op)
	assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err))
	assert.Len(t, walletView(t, h.Store, "adv"), 1, "a refused operation writes no line")

	// The refused key was not consumed: once funded, the same operation posts.
	p(ledger.TopUp("t2", "adv", 100, ""))
	r := p(op, nil)
	assert.False(t, r.Replayed)
	assert.Equal(t, []view{
		{ledger.TypeTopup, 100, 100, "", ""},
		{ledger.TypeTopup, 100, 200, "", ""},
		{ledger.TypeEscrowHold, -150, 50, "pub", "ch_1"},
	}, walletView(t, h.Store, "adv"))

	_, err = l.Post(ctx, mk(ledger.Adjustment("adj", "adv", -51, "too much")))
	assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err), "an adjustment never overdraws")
	verifyOK(t, h.Store)
}

func testEscrowClear(t *testing.T, h Harness, mode ledger.EarnMode) {
	l, clk := newLedger(h)
	p := poster(t, l)
	p(ledger.TopUp("t1", "adv", 10000, ""))
	hold := ledger.Hold{ID: "ch_1", Advertiser: "adv", Publisher: "pub", Amount: 333, ChainID: "ch_1"}
	p(ledger.EscrowHold("hold:ch_1", hold))
	clk.Advance(48 * time.Hour)
	r := p(ledger.Clear("clear:ch_1", hold, mode))

	// 333 × 30/100 = 99 (rounded down) to the platform; the publisher earns
	// 234 in cash, or 234 × 12/10 = 280 (rounded down) in credits.
	earn, take, bonus := int64(234), int64(99), int64(0)
	if mode == ledger.EarnCredits {
		earn, bonus = 280, 46
	}
	assert.Equal(t, []view{
		{ledger.TypeTopup, 10000, 10000, "", ""},
		{ledger.TypeEscrowHold, -333, 9667, "pub", "ch_1"},
		{ledger.TypeEscrowRelease, 333, 10000, "pub", "ch_1"},
		{ledger.TypeCharge, -333, 9667, "pub", "ch_1"},
	}, walletView(t, h.Store, "adv"))
	assert.Equal(t, []view{{ledger.TypeEarn, earn, earn, "adv", "ch_1"}}, walletView(t, h.Store, "pub"))

	revenue, _ := r.Line(ledger.Shard(ledger.PlatformRevenue, "clear:ch_1"))
	assert.Equal(t, take, revenue.Amount)
	if bonus > 0 {
		b, ok := r.Line(ledger.Shard(ledger.PlatformCreditBonus, "clear:ch_1"))
		require.True(t, ok)
		assert.Equal(t, -bonus, b.Amount)
	}
	pubEarn, _ := r.Line(ledger.Wallet("pub"))
	assert.Equal(t, mode, pubEarn.EarnMode)
	escrow := must(h.Store.Account(ctx, ledger.Escrow("adv")))
	assert.Equal(t, int64(0), escrow.Balance)

	totals := must(h.Store.Totals(ctx, ledger.Wallet("pub")))
	assert.Equal(t, []ledger.Total{{Type: ledger.TypeEarn, EarnMode: mode, Amount: earn, Count: 1}}, totals)
	verifyOK(t, h.Store)
}

func testEscrowRelease(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	p, mk := poster(t, l), opOf(t)
	p(ledger.TopUp("t1", "adv", 1000, ""))
	hold := ledger.Hold{ID: "ch_1", Advertiser: "adv", Publisher: "pub", Amount: 400, ChainID: "ch_1"}
	p(ledger.EscrowHold("hold:ch_1", hold))

	_, err := l.Post(ctx, mk(ledger.EscrowHold("hold:ch_1-again", hold)))
	assert.Equal(t, apperr.InvalidOperation, apperr.Code(err), "a hold id opens once")

	wrong := hold
	wrong.Amount = 401
	_, err = l.Post(ctx, mk(ledger.EscrowRelease("release:x", wrong)))
	assert.Equal(t, apperr.HoldMismatch, apperr.Code(err))
	missing := hold
	missing.ID = "ch_404"
	_, err = l.Post(ctx, mk(ledger.EscrowRelease("release:y", missing)))
	assert.Equal(t, apperr.HoldNotFound, apperr.Code(err))

	p(ledger.EscrowRelease("release:ch_1", hold))
	_, err = l.Post(ctx, mk(ledger.Clear("clear:ch_1", hold, ledger.EarnCash)))
	assert.Equal(t, apperr.HoldAlreadyResolved, apperr.Code(err), "a released hold cannot be charged")
	_, err = l.Post(ctx, mk(ledger.EscrowRelease("release:ch_1-twice", hold)))
	assert.Equal(t, apperr.HoldAlreadyResolved, apperr.Code(err))

	assert.Equal(t, []view{
		{ledger.TypeTopup, 1000, 1000, "", ""},
		{ledger.TypeEscrowHold, -400, 600, "pub", "ch_1"},
		{ledger.TypeEscrowRelease, 400, 1000, "pub", "ch_1"},
	}, walletView(t, h.Store, "adv"))
	holds := must(h.Store.AllHolds(ctx))
	require.Len(t, holds, 1)
	assert.Equal(t, "release", holds[0].Resolution)
	verifyOK(t, h.Store)
}

func testClawback(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	p := poster(t, l)
	p(ledger.TopUp("t1", "adv", 1000, ""))
	hold := ledger.Hold{ID: "ch_1", Advertiser: "adv", Publisher: "pub", Amount: 500, ChainID: "ch_1"}
	p(ledger.EscrowHold("hold:ch_1", hold))
	p(ledger.Clear("clear:ch_1", hold, ledger.EarnCash))
	p(ledger.PayoutReserve("po_1", "pub", 300))
	p(ledger.PayoutSettle("po_1", 300, "tr_1"))
	p(ledger.Clawback("clawback:ch_1", hold, ledger.EarnCash, "fraud_device_reused"))

	assert.Equal(t, []view{
		{ledger.TypeEarn, 350, 350, "adv", "ch_1"},
		{ledger.TypePayout, -300, 50, "", ""},
		{ledger.TypeClawback, -350, -300, "adv", "ch_1"},
	}, walletView(t, h.Store, "pub"), "the publisher owes what was already paid out")
	adv := walletView(t, h.Store, "adv")
	assert.Equal(t, view{ledger.TypeAdjustment, 500, 1000, "pub", "ch_1"}, adv[len(adv)-1])
	verifyOK(t, h.Store)
}

// A top-up refunded or disputed at the processor after its credits were
// spent: the wallet goes below zero (the app owes them), verify accepts it,
// and nothing else may overdraw it further. A won dispute gives it back.
func testProcessorAdjustment(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	p, mk := poster(t, l), opOf(t)
	p(ledger.TopUp("topup:cs_1", "adv", 5000, "checkout cs_1"))
	hold := ledger.Hold{ID: "ch_1", Advertiser: "adv", Publisher: "pub", Amount: 4000, ChainID: "ch_1"}
	p(ledger.EscrowHold("hold:ch_1", hold))
	p(ledger.Clear("clear:ch_1", hold, ledger.EarnCash))
	note := "stripe dispute dp_1 (charge ch_9): funds withdrawn"
	r := p(ledger.ProcessorAdjustment("stripe:dispute:dp_1:withdrawn", "adv", -5000, note))
	require.Len(t, r.Lines, 2)
	assert.Equal(t, ledger.Shard(ledger.ProcessorClearing, "stripe:dispute:dp_1:withdrawn"), r.Lines[0].Account, "the processor's side, as a top-up")
	assert.Equal(t, int64(5000), r.Lines[0].Amount)
	w := walletView(t, h.Store, "adv")
	assert.Equal(t, view{ledger.TypeAdjustment, -5000, -4000, "", ""}, w[len(w)-1])
	verifyOK(t, h.Store)

	_, err := l.Post(ctx, mk(ledger.Adjustment("adjustment:1", "adv", -1, "operator")))
	assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err), "an operator's adjustment never overdraws")
	_, err = ledger.ProcessorAdjustment("k", "adv", 0, note)
	assert.Equal(t, apperr.InvalidOperation, apperr.Code(err))

	p(ledger.ProcessorAdjustment("stripe:dispute:dp_1:reinstated", "adv", 5000, "stripe dispute dp_1 (charge ch_9): funds reinstated"))
	assert.Equal(t, int64(1000), must(h.Store.Account(ctx, ledger.Wallet("adv"))).Balance)
	verifyOK(t, h.Store)

	// An overdrawn adjustment whose counterpart is not the processor's is a
	// violation: verify tells the two shapes apart.
	p(ledger.ProcessorAdjustment("stripe:refund:ch_9:5000", "adv", -5000, "stripe refund of checkout cs_1 (charge ch_9)"))
	verifyOK(t, h.Store)
	require.NoError(t, h.Tamper(ctx, "UPDATE ledger_lines SET account_id = 'platform:adjustments:00' WHERE account_id LIKE 'processor:clearing:%' AND note LIKE 'stripe refund%'"))
	rep := must(ledger.Verify(ctx, h.Store))
	found := false
	for _, v := range rep.Violations {
		found = found || (v.Check == "overdraft" && v.Subject == ledger.Wallet("adv"))
	}
	assert.True(t, found, "verify must report the overdraft; got %v", rep.Violations)
}

func testPayoutAndAdjustment(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	p, mk := poster(t, l), opOf(t)
	p(ledger.TopUp("t1", "app", 6000, ""))
	_, err := l.Post(ctx, mk(ledger.PayoutReserve("po_1", "app", 6001)))
	assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err))

	// A reservation settled: the money leaves for the processor.
	reserved := p(ledger.PayoutReserve("po_2", "app", 5000))
	line, ok := reserved.Line(ledger.Wallet("app"))
	require.True(t, ok)
	assert.Equal(t, "payout po_2", line.Note)
	p(ledger.PayoutSettle("po_2", 5000, "tr_2"))
	assert.True(t, p(ledger.PayoutSettle("po_2", 5000, "tr_2")).Replayed)
	_, err = l.Post(ctx, mk(ledger.PayoutReturn("po_2", "app", 5000, "refused")))
	assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err), "a settled reservation is never also returned")

	// A reservation returned: the wallet gets it back, and cannot be settled after.
	p(ledger.PayoutReserve("po_3", "app", 1000))
	p(ledger.PayoutReturn("po_3", "app", 1000, "account closed"))
	_, err = l.Post(ctx, mk(ledger.PayoutSettle("po_3", 1000, "tr_3")))
	assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err), "a returned reservation is never also settled")

	p(ledger.Adjustment("adj:1", "app", -1000, "duplicate top-up reversed"))
	p(ledger.Adjustment("adj:2", "app", 250, "goodwill"))
	assert.Equal(t, []view{
		{ledger.TypeTopup, 6000, 6000, "", ""},
		{ledger.TypePayout, -5000, 1000, "", ""},
		{ledger.TypePayout, -1000, 0, "", ""},
		{ledger.TypePayout, 1000, 1000, "", ""},
		{ledger.TypeAdjustment, -1000, 0, "", ""},
		{ledger.TypeAdjustment, 250, 250, "", ""},
	}, walletView(t, h.Store, "app"))
	for _, po := range []string{"po_2", "po_3"} {
		a := must(h.Store.Account(ctx, ledger.PayoutClearing(po)))
		assert.Zero(t, a.Balance, "%s is settled or returned", po)
		assert.Equal(t, int64(2), a.Seq)
	}
	_, err = ledger.Adjustment("adj:3", "app", 5, "")
	assert.Equal(t, apperr.InvalidOperation, apperr.Code(err), "an adjustment needs a note")
	_, err = ledger.TopUp("t2", "app", 0, "")
	assert.Equal(t, apperr.InvalidOperation, apperr.Code(err))
	verifyOK(t, h.Store)
}

func testBatch(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	mk := opOf(t)
	hold := ledger.Hold{ID: "ch_1", Advertiser: "adv", Publisher: "pub", Amount: 700, ChainID: "ch_1"}
	ops := []ledger.Operation{
		mk(ledger.TopUp("t1", "adv", 1000, "")),
		mk(ledger.EscrowHold("hold:ch_1", hold)),
		mk(ledger.PayoutReserve("po_1", "adv", 500)), // 300 left after the hold: refused
		mk(ledger.TopUp("t1", "adv", 1000, "")),      // repeat inside the batch: replay
		mk(ledger.TopUp("t1", "adv", 999, "")),       // same key, other content
		{Key: "bad", Kind: ledger.KindAdjustment, Postings: []ledger.Posting{{Account: ledger.Wallet("adv"), Type: ledger.TypeAdjustment, Amount: 5}}},
		mk(ledger.Clear("clear:ch_1", hold, ledger.EarnCash)),
	}
	results, errs, err := l.PostBatch(ctx, ops)
	require.NoError(t, err)
	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	assert.Equal(t, apperr.InsufficientFunds, apperr.Code(errs[2]))
	assert.NoError(t, errs[3])
	assert.True(t, results[3].Replayed)
	assert.Equal(t, results[0].Operation.ID, results[3].Operation.ID)
	assert.Equal(t, apperr.OperationKeyReused, apperr.Code(errs[4]))
	assert.Equal(t, apperr.InvalidOperation, apperr.Code(errs[5]))
	assert.NoError(t, errs[6], "an operation sees the effects of earlier ones in its batch")
	assert.Equal(t, []view{
		{ledger.TypeTopup, 1000, 1000, "", ""},
		{ledger.TypeEscrowHold, -700, 300, "pub", "ch_1"},
		{ledger.TypeEscrowRelease, 700, 1000, "pub", "ch_1"},
		{ledger.TypeCharge, -700, 300, "pub", "ch_1"},
	}, walletView(t, h.Store, "adv"))

	// Replaying the whole batch posts nothing new.
	results, errs, err = l.PostBatch(ctx, ops[:2])
	require.NoError(t, err)
	assert.NoError(t, errs[0])
	assert.True(t, results[0].Replayed && results[1].Replayed)
	assert.Len(t, walletView(t, h.Store, "adv"), 4)
	verifyOK(t, h.Store)
}

func testLinesQuery(t *testing.T, h Harness) {
	l, clk := newLedger(h)
	p := poster(t, l)
	start := clk.Now()
	for i := range 10 {
		p(ledger.TopUp(fmt.Sprintf("t%d", i), "app", int64(100*(i+1)), ""))
		clk.Advance(24 * time.Hour)
	}
	w := ledger.Wallet("app")
	page := must(h.Store.Lines(ctx, w, ledger.LineQuery{Limit: 4}))
	require.Len(t, page, 4)
	assert.Equal(t, int64(1), page[0].Seq)
	page = must(h.Store.Lines(ctx, w, ledger.LineQuery{AfterSeq: 4, Limit: 4}))
	require.Len(t, page, 4)
	assert.Equal(t, []int64{5, 6, 7, 8}, seqs(page))
	page = must(h.Store.Lines(ctx, w, ledger.LineQuery{AfterSeq: 8, Limit: 4}))
	assert.Equal(t, []int64{9, 10}, seqs(page))

	// Days 3 to 5: from inclusive, before exclusive.
	page = must(h.Store.Lines(ctx, w, ledger.LineQuery{From: start.Add(48 * time.Hour), Before: start.Add(120 * time.Hour)}))
	assert.Equal(t, []int64{3, 4, 5}, seqs(page))
	page = must(h.Store.Lines(ctx, w, ledger.LineQuery{From: start.Add(48 * time.Hour), AfterSeq: 4, Limit: 1}))
	assert.Equal(t, []int64{5}, seqs(page))
	assert.Empty(t, must(h.Store.Lines(ctx, ledger.Wallet("nobody"), ledger.LineQuery{})))
}

// A ledger page from a date is a seek that relies on an account's lines
// being in time order as well as in sequence order: the ledger keeps that
// order when the clock steps back (a line is dated at its account's last
// line at the earliest), and every page, whatever its bounds, is exactly the
// account's lines in sequence order filtered by the dates.
func testLinePagesInTimeOrder(t *testing.T, h Harness) {
	l, clk := newLedger(h)
	p := poster(t, l)
	start := clk.Now()
	steps := []time.Duration{5 * time.Hour, 20 * time.Hour, -30 * time.Hour, 0, 50 * time.Hour, -2 * time.Hour, 26 * time.Hour, time.Microsecond, 72 * time.Hour}
	for i := range 45 {
		p(ledger.TopUp(fmt.Sprintf("t%d", i), "app", int64(i+1), ""))
		if i%3 == 0 {
			p(ledger.TopUp(fmt.Sprintf("o%d", i), "other", 1, "")) // another account's lines in between
		}
		clk.Advance(steps[i%len(steps)])
	}
	w := ledger.Wallet("app")
	all := must(h.Store.Lines(ctx, w, ledger.LineQuery{}))
	require.Len(t, all, 45)
	for i := 1; i < len(all); i++ {
		require.False(t, all[i].CreatedAt.Before(all[i-1].CreatedAt), "line %d is dated before line %d", all[i].Seq, all[i-1].Seq)
	}
	verifyOK(t, h.Store)

	days := []time.Time{{}}
	for d := -1; d < 14; d++ {
		days = append(days, start.Truncate(24*time.Hour).AddDate(0, 0, d))
	}
	days = append(days, all[7].CreatedAt, all[20].CreatedAt) // bounds exactly on a line's time
	for _, from := range days {
		for _, before := range days {
			for _, after := range []int64{0, 3, 17, 44} {
				var want []int64
				for _, line := range all {
					if line.Seq > after && (from.IsZero() || !line.CreatedAt.Before(from)) && (before.IsZero() || line.CreatedAt.Before(before)) {
						want = append(want, line.Seq)
					}
				}
				limit := 5
				if len(want) > limit {
					want = want[:limit]
				}
				got := seqs(must(h.Store.Lines(ctx, w, ledger.LineQuery{From: from, Before: before, AfterSeq: after, Limit: limit})))
				require.Equal(t, len(want), len(got), "from %v before %v after %d", from, before, after)
				if len(want) > 0 {
					require.Equal(t, want, got, "from %v before %v after %d", from, before, after)
				}
			}
		}
	}
}

func seqs(lines []ledger.Line) []int64 {
	out := make([]int64, len(lines))
	for i, l := range lines {
		out[i] = l.Seq
	}
	return out
}

// The append-only tables refuse changes in the database itself, whatever the
// application code does.
var appendOnlyTables = []string{"ledger_operations", "ledger_lines", "escrow_holds", "escrow_resolutions"}

func testAppendOnly(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	p := poster(t, l)
	hold := ledger.Hold{ID: "ch_1", Advertiser: "adv", Publisher: "pub", Amount: 100, ChainID: "ch_1"}
	p(ledger.TopUp("t1", "adv", 1000, ""))
	p(ledger.EscrowHold("hold:ch_1", hold))
	p(ledger.EscrowRelease("release:ch_1", hold))
	before := walletView(t, h.Store, "adv")

	for _, table := range appendOnlyTables {
		for _, stmt := range []string{
			"UPDATE " + table + " SET created_at = created_at",
			"DELETE FROM " + table,
		} {
			err := h.Exec(ctx, stmt)
			require.Error(t, err, "%s must be refused", stmt)
		}
	}
	err := h.Exec(ctx, "DELETE FROM ledger_accounts")
	require.Error(t, err, "account heads are never deleted")
	assert.Equal(t, before, walletView(t, h.Store, "adv"))
	verifyOK(t, h.Store)
}

func testVerifyDetectsTampering(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	p := poster(t, l)
	p(ledger.TopUp("t1", "app", 1000, ""))
	p(ledger.TopUp("t2", "app", 2000, ""))
	hold := ledger.Hold{ID: "ch_1", Advertiser: "app", Publisher: "pub", Amount: 100, ChainID: "ch_1"}
	p(ledger.EscrowHold("hold:ch_1", hold))
	p(ledger.PayoutReserve("po_1", "app", 500))
	p(ledger.PayoutSettle("po_1", 500, "tr_1"))
	verifyOK(t, h.Store)

	require.NoError(t, h.Tamper(ctx, "UPDATE ledger_lines SET amount = 1500 WHERE account_id = 'wallet:app' AND seq = 1"))
	require.NoError(t, h.Tamper(ctx, "INSERT INTO escrow_resolutions (hold_id, resolution, operation_id, created_at) SELECT id, 'release', 'op_forged', created_at FROM escrow_holds"))
	// A payout's reservation settled for less than it holds.
	require.NoError(t, h.Tamper(ctx, "UPDATE ledger_lines SET amount = -400, balance_after = 100 WHERE account_id = 'payout_clearing:po_1' AND seq = 2"))
	rep := must(ledger.Verify(ctx, h.Store))
	require.False(t, rep.OK())
	checks := map[string]bool{}
	for _, v := range rep.Violations {
		checks[v.Check] = true
	}
	for _, c := range []string{"zero_sum", "balance_chain", "hash_chain", "escrow", "payout_clearing"} {
		assert.True(t, checks[c], "verify must report %s; got %v", c, rep.Violations)
	}
}

func testConcurrentReplay(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	mk := opOf(t)
	op := mk(ledger.TopUp("topup:cs_race", "app", 5000, ""))
	const n = 50
	results := make([]ledger.Result, n)
	errs := make([]error, n)
	start := make(chan struct{})
	done := make(chan int)
	for i := range n {
		go func() {
			<-start
			results[i], errs[i] = l.Post(ctx, op)
			done <- i
		}()
	}
	close(start)
	for range n {
		<-done
	}
	fresh := 0
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, results[0].Operation.ID, results[i].Operation.ID)
		if !results[i].Replayed {
			fresh++
		}
	}
	assert.Equal(t, 1, fresh, "exactly one caller posts; the others replay")
	assert.Len(t, walletView(t, h.Store, "app"), 1)
	verifyOK(t, h.Store)
}
