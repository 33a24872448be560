package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/ledger"
)

// testShardedPlatformVerify: random settlements (holds, clears in both earn
// modes, releases, clawbacks, adjustments, in batches as the sweep posts
// them) spread over the platform accounts' shards; verify passes, the shards
// of each platform account sum to what the operations moved, and a changed
// line of one shard is reported.
func testShardedPlatformVerify(t *testing.T, h Harness) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	l, clk := newLedger(h)
	p := poster(t, l)
	apps := []string{"a1", "a2", "a3", "a4"}
	for _, a := range apps {
		p(ledger.TopUp("topup:"+a, a, 1_000_000, ""))
	}
	var take, bonus, adjustments int64
	for round := range 6 {
		var ops []ledger.Operation
		var holds []ledger.Hold
		for i := range 40 {
			adv, pub := apps[rng.IntN(len(apps))], apps[rng.IntN(len(apps))]
			if adv == pub {
				continue
			}
			id := fmt.Sprintf("ch_%d_%d", round, i)
			h := ledger.Hold{ID: id, Advertiser: adv, Publisher: pub, Amount: 10 + rng.Int64N(900), ChainID: id}
			op, err := ledger.EscrowHold("hold:"+id, h)
			require.NoError(t, err)
			ops, holds = append(ops, op), append(holds, h)
		}
		_, errs, err := l.PostBatch(ctx, ops)
		require.NoError(t, err)
		for _, e := range errs {
			require.NoError(t, e)
		}
		clk.Advance(time.Minute)
		// Settle them in one batch, as a sweep does.
		ops = ops[:0]
		var cleared []ledger.Hold
		var modes []ledger.EarnMode
		for _, h := range holds {
			if rng.IntN(4) == 0 {
				ops = append(ops, must(ledger.EscrowRelease("release:"+h.ID, h)))
				continue
			}
			mode := []ledger.EarnMode{ledger.EarnCash, ledger.EarnCredits}[rng.IntN(2)]
			ops = append(ops, must(ledger.Clear("clear:"+h.ID, h, mode)))
			cleared, modes = append(cleared, h), append(modes, mode)
			_, tk, b := ledger.Split(h.Amount, mode)
			take, bonus = take+tk, bonus+b
		}
		_, errs, err = l.PostBatch(ctx, ops)
		require.NoError(t, err)
		for _, e := range errs {
			require.NoError(t, e)
		}
		// A few clawbacks and adjustments, one by one.
		for i, h := range cleared {
			if rng.IntN(8) != 0 {
				continue
			}
			p(ledger.Clawback("clawback:"+h.ID, h, modes[i], "fraud"))
			_, tk, b := ledger.Split(h.Amount, modes[i])
			take, bonus = take-tk, bonus-b
		}
		amount := 1 + rng.Int64N(500)
		p(ledger.Adjustment(fmt.Sprintf("adj:%d", round), apps[round%len(apps)], amount, "goodwill"))
		adjustments -= amount
		clk.Advance(time.Minute)
	}
	rep := verifyOK(t, h.Store)
	require.Positive(t, rep.Lines)

	// Each platform account is the sum of its shards, and several shards
	// were used.
	sums := map[string]int64{}
	used := map[string]int{}
	var revenueShard string
	for _, a := range must(h.Store.Accounts(ctx)) {
		if ledger.ClassOf(a.ID) != ledger.ClassPlatform || a.Seq == 0 {
			continue
		}
		base := a.ID[:strings.LastIndexByte(a.ID, ':')]
		sums[base] += a.Balance
		used[base]++
		if base == ledger.PlatformRevenue {
			revenueShard = a.ID
		}
	}
	assert.Equal(t, take, sums[ledger.PlatformRevenue], "the revenue shards sum to the takes")
	assert.Equal(t, -bonus, sums[ledger.PlatformCreditBonus], "the bonus shards sum to the bonuses paid")
	assert.Equal(t, adjustments, sums[ledger.PlatformAdjustments])
	assert.Greater(t, used[ledger.PlatformRevenue], 1, "clears spread over several revenue shards")

	// One shard's line changed: verify reports it.
	require.NoError(t, h.Tamper(ctx, fmt.Sprintf("UPDATE ledger_lines SET amount = amount + 1 WHERE account_id = '%s' AND seq = 1", revenueShard)))
	rep = must(ledger.Verify(ctx, h.Store))
	checks := map[string]bool{}
	for _, v := range rep.Violations {
		checks[v.Check] = true
		if v.Check != "zero_sum" {
			assert.Equal(t, revenueShard, v.Subject, "only the changed shard's chain is broken: %v", v)
		}
	}
	assert.True(t, checks["balance_chain"] && checks["hash_chain"] && checks["zero_sum"], "verify must report the changed line; got %v", rep.Violations)
}

// testVerifyOrphanLines: a line naming an operation that was never recorded,
// on an account without a head (what the foreign keys of ledger_lines, which
// PostgreSQL no longer has, used to refuse), is reported by verify.
func testVerifyOrphanLines(t *testing.T, h Harness) {
	l, _ := newLedger(h)
	p := poster(t, l)
	p(ledger.TopUp("t1", "app", 1000, ""))
	verifyOK(t, h.Store)
	require.NoError(t, h.Tamper(ctx, `INSERT INTO ledger_lines (id, operation_id, idx, account_id, seq, type, amount, balance_after, created_at, prev_hash, hash)
SELECT 'op_forged.0', 'op_forged', 0, 'wallet:ghost', 1, 'adjustment', 0 + 5, 5, created_at, prev_hash, hash FROM ledger_lines WHERE account_id = 'wallet:app'`))
	rep := must(ledger.Verify(ctx, h.Store))
	var got []string
	for _, v := range rep.Violations {
		got = append(got, v.Check+" "+v.Subject)
	}
	assert.Contains(t, got, "operation op_forged", "a line without its operation is reported; got %v", rep.Violations)
	assert.Contains(t, got, "head wallet:ghost", "a line of an account without a head is reported; got %v", rep.Violations)
}
