package storetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
)

// Workers and OpsPerWorker size the random concurrent test. The issue asks
// for 32 goroutines × thousands of operations; XPROMO_LEDGER_OPS overrides
// the per-worker count (e.g. 5000 for a long soak), -short lowers it.
const Workers = 32

func opsPerWorker() int {
	if v, err := strconv.Atoi(os.Getenv("XPROMO_LEDGER_OPS")); err == nil && v > 0 {
		return v
	}
	if testing.Short() {
		return 60
	}
	return 100
}

// world is the shared state of the random workload: the holds that exist and
// what the test believes each account's balance is, from the results the
// ledger returned. After the run the store must agree with it exactly.
type world struct {
	mu       sync.Mutex
	holds    []ledger.Hold              // every hold ever opened; resolutions race on them
	cleared  map[string]ledger.EarnMode // holds charged, with the publisher's mode
	resolved map[string]int             // successful resolutions per hold (must be ≤ 1)
	reserved []reservation              // payout reservations; settlements and returns race on them
	paid     map[string]int             // successful settlements or returns per payout (must be ≤ 1)
	expected map[string]int64           // account → balance implied by the results
	ops      map[string]int             // fresh postings per operation key (must be 1)
}

// reservation is a payout's reserved amount.
type reservation struct {
	id, app string
	amount  int64
}

func (w *world) record(r ledger.Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.Replayed {
		return
	}
	w.ops[r.Operation.Key]++
	for _, l := range r.Lines {
		w.expected[l.Account] += l.Amount
	}
}

func testConcurrentRandom(t *testing.T, h Harness) {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("XPROMO_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (XPROMO_SEED=%d reproduces the workload; the interleaving is the scheduler's)", seed, seed)

	l, _ := newLedger(h)
	w := &world{cleared: map[string]ledger.EarnMode{}, resolved: map[string]int{}, paid: map[string]int{}, expected: map[string]int64{}, ops: map[string]int{}}
	apps := []string{"app0", "app1", "app2", "app3", "app4", "app5", "app6", "app7"}
	n := opsPerWorker()

	var wg sync.WaitGroup
	failures := make(chan string, Workers)
	for g := range Workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			var mine []ledger.Operation // for replays
			fail := func(format string, args ...any) { failures <- fmt.Sprintf(format, args...) }
			for i := range n {
				key := fmt.Sprintf("w%d-%d", g, i)
				app := apps[rng.IntN(len(apps))]
				var op ledger.Operation
				var err error
				var hold *ledger.Hold
				var resolve string
				var payout *reservation
				switch x := rng.IntN(100); {
				case x < 30:
					op, err = ledger.TopUp("topup:"+key, app, 100+rng.Int64N(4900), "")
				case x < 55:
					pub := apps[(slicesIndex(apps, app)+1+rng.IntN(len(apps)-1))%len(apps)]
					h := ledger.Hold{ID: "ch_" + key, Advertiser: app, Publisher: pub, Amount: 50 + rng.Int64N(750), ChainID: "ch_" + key}
					hold = &h
					op, err = ledger.EscrowHold("hold:"+key, h)
				case x < 80:
					w.mu.Lock()
					if len(w.holds) == 0 {
						w.mu.Unlock()
						continue
					}
					// Recent holds are the likeliest to be raced by other workers.
					h := w.holds[len(w.holds)-1-rng.IntN(min(len(w.holds), 8))]
					w.mu.Unlock()
					switch rng.IntN(3) {
					case 0:
						resolve = "release"
						op, err = ledger.EscrowRelease("release:"+key, h)
					case 1:
						resolve = "charge:cash"
						op, err = ledger.Clear("clear:"+key, h, ledger.EarnCash)
					default:
						resolve = "charge:credits"
						op, err = ledger.Clear("clear:"+key, h, ledger.EarnCredits)
					}
					hold = &h
				case x < 85:
					w.mu.Lock()
					var h ledger.Hold
					var mode ledger.EarnMode
					for _, c := range w.holds {
						if m, ok := w.cleared[c.ID]; ok && rng.IntN(2) == 0 {
							h, mode = c, m
							break
						}
					}
					w.mu.Unlock()
					if h.ID == "" {
						continue
					}
					// The key is the chain's: concurrent clawbacks of one chain replay.
					op, err = ledger.Clawback("clawback:"+h.ID, h, mode, "fraud found after clearing")
				case x < 87:
					payout = &reservation{id: "po_" + key, app: app, amount: 1 + rng.Int64N(3000)}
					op, err = ledger.PayoutReserve(payout.id, app, payout.amount)
				case x < 90:
					w.mu.Lock()
					if len(w.reserved) == 0 {
						w.mu.Unlock()
						continue
					}
					// Settlements and returns of recent reservations race.
					r := w.reserved[len(w.reserved)-1-rng.IntN(min(len(w.reserved), 4))]
					w.mu.Unlock()
					if rng.IntN(2) == 0 {
						op, err = ledger.PayoutSettle(r.id, r.amount, "tr_"+r.id)
					} else {
						op, err = ledger.PayoutReturn(r.id, r.app, r.amount, "refused")
					}
					payout, resolve = &r, "paid"
				case x < 93:
					amount := rng.Int64N(2000) - 1000 // -1000..999, never zero below
					if amount >= 0 {
						amount++
					}
					op, err = ledger.Adjustment("adj:"+key, app, amount, "operator correction")
				case x < 95:
					// A top-up refunded or disputed at the processor (it may
					// overdraw the wallet), or a dispute won.
					amount := rng.Int64N(4000) - 3000 // -3000..999, never zero below
					if amount >= 0 {
						amount++
					}
					op, err = ledger.ProcessorAdjustment("stripe:"+key, app, amount, "stripe dispute")
				default:
					if len(mine) == 0 {
						continue
					}
					op = mine[rng.IntN(len(mine))]
				}
				if err != nil {
					fail("building operation %s: %v", key, err)
					return
				}
				r, err := l.Post(ctx, op)
				if err != nil {
					switch apperr.Code(err) {
					case apperr.InsufficientFunds, apperr.HoldAlreadyResolved:
						continue // refused by the rules, as it should be under contention
					}
					fail("posting %s (%s): %v", op.Key, op.Kind, err)
					return
				}
				w.record(r)
				mine = append(mine, op)
				if payout != nil && !r.Replayed {
					w.mu.Lock()
					if resolve == "" {
						w.reserved = append(w.reserved, *payout)
					} else {
						w.paid[payout.id]++
					}
					w.mu.Unlock()
				}
				if hold != nil && !r.Replayed {
					w.mu.Lock()
					switch resolve {
					case "":
						w.holds = append(w.holds, *hold)
					case "release":
						w.resolved[hold.ID]++
					case "charge:cash", "charge:credits":
						w.resolved[hold.ID]++
						w.cleared[hold.ID] = ledger.EarnMode(resolve[len("charge:"):])
					}
					w.mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	require.False(t, t.Failed())

	// Every operation posted at most once, every hold resolved at most once.
	for key, n := range w.ops {
		require.Equal(t, 1, n, "operation %s posted %d times", key, n)
	}
	for id, n := range w.resolved {
		require.Equal(t, 1, n, "hold %s resolved %d times", id, n)
	}
	for id, n := range w.paid {
		require.Equal(t, 1, n, "payout %s settled or returned %d times", id, n)
	}
	stored := map[string]string{}
	for _, h := range must(h.Store.AllHolds(ctx)) {
		stored[h.ID] = h.Resolution
	}
	for id := range w.resolved {
		assert.NotEmpty(t, stored[id], "hold %s resolved in results but not in the store", id)
	}

	// The store's balances are exactly what the results said.
	accounts := must(h.Store.Accounts(ctx))
	require.NotEmpty(t, accounts)
	for _, a := range accounts {
		assert.Equal(t, w.expected[a.ID], a.Balance, "balance of %s", a.ID)
	}
	rep := verifyOK(t, h.Store)
	t.Logf("%d workers × %d ops: %d operations, %d lines, %d holds (%d resolved), %d accounts; verify OK",
		Workers, n, rep.Operations, rep.Lines, rep.Holds, len(w.resolved), rep.Accounts)
}

func slicesIndex(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
