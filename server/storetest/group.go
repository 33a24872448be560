package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
)

// gateStore holds every transaction at its start until open is closed, so
// that a test can queue posts behind the first one and know they share
// the next transaction; it records the keys of each Append, and refuses an
// Append holding the poison key as a database would refuse a statement.
type gateStore struct {
	ledger.Store
	open    chan struct{}
	entered chan struct{} // closed when the first transaction starts
	once    sync.Once
	poison  string

	mu      sync.Mutex
	appends [][]string
}

func newGateStore(s ledger.Store, poison string) *gateStore {
	return &gateStore{Store: s, open: make(chan struct{}), entered: make(chan struct{}), poison: poison}
}

func (g *gateStore) InTx(ctx context.Context, fn func(ctx context.Context, tx ledger.Tx) error) error {
	g.once.Do(func() { close(g.entered) })
	<-g.open
	return g.Store.InTx(ctx, func(ctx context.Context, tx ledger.Tx) error { return fn(ctx, gateTx{tx, g}) })
}

var errPoison = errors.New("storetest: the database refused the poisoned statement")

type gateTx struct {
	ledger.Tx
	g *gateStore
}

func (t gateTx) Append(ctx context.Context, b ledger.Batch) error {
	var keys []string
	for _, op := range b.Operations {
		keys = append(keys, op.Key)
	}
	t.g.mu.Lock()
	t.g.appends = append(t.g.appends, keys)
	t.g.mu.Unlock()
	if slices.Contains(keys, t.g.poison) {
		return errPoison
	}
	return t.Tx.Append(ctx, b)
}

// queueBehindFirst posts first, waits until its transaction has started
// (and is held by the gate), then posts ops concurrently and waits until
// all of them wait for the committer: they will share one transaction.
// It opens the gate and returns every outcome, first's at index 0.
func queueBehindFirst(t *testing.T, l *ledger.Ledger, g *gateStore, first ledger.Operation, ops []ledger.Operation) ([]ledger.Result, []error) {
	t.Helper()
	results := make([]ledger.Result, len(ops)+1)
	errs := make([]error, len(ops)+1)
	var wg sync.WaitGroup
	wg.Go(func() { results[0], errs[0] = l.Post(ctx, first) })
	<-g.entered
	for i, op := range ops {
		wg.Go(func() { results[i+1], errs[i+1] = l.Post(ctx, op) })
	}
	// A wait, not a timing assertion: the posts are queued in any order.
	require.Eventually(t, func() bool { return l.Waiting() == len(ops) }, time.Minute, time.Millisecond)
	close(g.open)
	wg.Wait()
	return results, errs
}

// testGroupCommitFailsAlone: posts that queue while a transaction is in
// flight share the next one, and the one the rules refuse fails alone.
func testGroupCommitFailsAlone(t *testing.T, h Harness) {
	l0, _ := newLedger(h)
	mk := opOf(t)
	must(l0.Post(ctx, mk(ledger.TopUp("fund", "adv", 1000, ""))))

	g := newGateStore(h.Store, "")
	l := &ledger.Ledger{Store: g, Now: l0.Now}
	hold := func(id string, amount int64) ledger.Operation {
		return mk(ledger.EscrowHold("hold:"+id, ledger.Hold{ID: id, Advertiser: "adv", Publisher: "pub", Amount: amount, ChainID: id}))
	}
	ops := []ledger.Operation{
		hold("ch_1", 600),
		hold("ch_2", 600), // 400 left after ch_1 or 1000 before it: one of the two is refused
		mk(ledger.TopUp("t2", "pub", 50, "")),
		mk(ledger.TopUp("t3", "other", 70, "")),
		mk(ledger.TopUp("t2", "pub", 50, "")), // the same key again: never in the same batch
	}
	results, errs := queueBehindFirst(t, l, g, mk(ledger.TopUp("t1", "pub", 10, "")), ops)

	require.NoError(t, errs[0])
	refused := 0
	for i, err := range errs[1:3] {
		if err != nil {
			refused++
			assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err), "hold %d", i+1)
		}
	}
	assert.Equal(t, 1, refused, "exactly one of the two holds is refused")
	for _, i := range []int{3, 4, 5} {
		require.NoError(t, errs[i])
	}
	assert.Equal(t, results[3].Operation.ID, results[5].Operation.ID, "the repeated key is the same operation")
	assert.NotEqual(t, results[3].Replayed, results[5].Replayed, "exactly one of the two posts of t2 replays")

	// The queued posts committed together: one Append held all of them but
	// the refused hold and the repeated key.
	g.mu.Lock()
	appends := g.appends
	g.mu.Unlock()
	require.GreaterOrEqual(t, len(appends), 2)
	assert.Equal(t, []string{"t1"}, appends[0])
	assert.Len(t, appends[1], 3, "the queued posts shared one transaction: %v", appends)

	a := must(h.Store.Account(ctx, ledger.Wallet("adv")))
	assert.Equal(t, int64(400), a.Balance)
	assert.Equal(t, int64(60), must(h.Store.Account(ctx, ledger.Wallet("pub"))).Balance)
	verifyOK(t, h.Store)
}

// testGroupCommitTransactionFailure: when the shared transaction fails as
// a whole, its posts are tried again alone, and only the culprit fails.
func testGroupCommitTransactionFailure(t *testing.T, h Harness) {
	l0, _ := newLedger(h)
	mk := opOf(t)
	g := newGateStore(h.Store, "poison")
	l := &ledger.Ledger{Store: g, Now: l0.Now}
	var ops []ledger.Operation
	for i := range 6 {
		key := fmt.Sprintf("t%d", i)
		if i == 3 {
			key = "poison"
		}
		ops = append(ops, mk(ledger.TopUp(key, fmt.Sprintf("app%d", i%2), 100, "")))
	}
	results, errs := queueBehindFirst(t, l, g, mk(ledger.TopUp("first", "app0", 1, "")), ops)

	for i, err := range errs {
		if i == 4 {
			assert.ErrorIs(t, err, errPoison)
			continue
		}
		require.NoError(t, err, "post %d", i)
		assert.False(t, results[i].Replayed)
	}
	assert.Equal(t, int64(301), must(h.Store.Account(ctx, ledger.Wallet("app0"))).Balance)
	assert.Equal(t, int64(200), must(h.Store.Account(ctx, ledger.Wallet("app1"))).Balance)
	ops1 := must(h.Store.Lines(ctx, ledger.Wallet("app1"), ledger.LineQuery{}))
	assert.Len(t, ops1, 2, "the poisoned top-up wrote nothing")
	verifyOK(t, h.Store)
}

// overlapStore says it runs n write transactions at once
// (ledger.WriteConcurrency), so that the group commit keeps n batches in
// flight; it records every account a transaction in flight reads ahead or
// locks, and notes any account two of them hold at once. It refuses an
// Append holding a poisoned key, as a database would refuse a statement.
type overlapStore struct {
	ledger.Store
	n      int
	poison func(key string) bool

	mu       sync.Mutex
	held     map[string]int
	overlaps []string
}

func (s *overlapStore) WriteConcurrency() int { return s.n }

func (s *overlapStore) InTx(ctx context.Context, fn func(ctx context.Context, tx ledger.Tx) error) error {
	var mine []string
	release := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, id := range mine {
			if s.held[id]--; s.held[id] == 0 {
				delete(s.held, id)
			}
		}
		mine = nil
	}
	defer release()
	return s.Store.InTx(ctx, func(ctx context.Context, tx ledger.Tx) error {
		release() // a retry starts afresh
		return fn(ctx, overlapTx{Tx: tx, s: s, mine: &mine})
	})
}

type overlapTx struct {
	ledger.Tx
	s    *overlapStore
	mine *[]string
}

func (t overlapTx) hold(ids []string) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	for _, id := range ids {
		if slices.Contains(*t.mine, id) {
			continue
		}
		if t.s.held[id] > 0 {
			t.s.overlaps = append(t.s.overlaps, id)
		}
		t.s.held[id]++
		*t.mine = append(*t.mine, id)
	}
}

func (t overlapTx) ReadAhead(ctx context.Context, ops []ledger.Operation) error {
	for _, op := range ops {
		for _, p := range op.Postings {
			t.hold([]string{p.Account})
		}
	}
	if r, ok := t.Tx.(ledger.ReadAhead); ok {
		return r.ReadAhead(ctx, ops)
	}
	return nil
}

func (t overlapTx) LockAccounts(ctx context.Context, ids []string) (map[string]ledger.Account, error) {
	t.hold(ids)
	return t.Tx.LockAccounts(ctx, ids)
}

func (t overlapTx) Append(ctx context.Context, b ledger.Batch) error {
	for _, op := range b.Operations {
		if t.s.poison(op.Key) {
			return errPoison
		}
	}
	return t.Tx.Append(ctx, b)
}

// testGroupCommitConcurrentBatches: 16 posters over 4 apps (top-ups whose
// platform shards collide, escrow holds that may find the wallet short,
// replays of their own keys) through 3 committers, with one top-up in 5
// refused by the database in whichever shared transaction holds it. No two
// transactions in flight hold one account; each poisoned top-up fails
// alone and writes nothing; every other post commits exactly once, replays
// return the first result, and the balances are what the answers add up to.
func testGroupCommitConcurrentBatches(t *testing.T, h Harness) {
	l0, _ := newLedger(h)
	s := &overlapStore{Store: h.Store, n: 3, held: map[string]int{},
		poison: func(key string) bool { return strings.HasPrefix(key, "poison") }}
	l := &ledger.Ledger{Store: s, Now: l0.Now}
	const posters, each, apps = 16, 30, 4

	var mu sync.Mutex
	want := map[string]int64{}
	var wg sync.WaitGroup
	for g := range posters {
		wg.Go(func() {
			for i := range each {
				app := fmt.Sprintf("app%d", (g+i)%apps)
				key := fmt.Sprintf("t%d-%d", g, i)
				poisoned := i%10 == 4 // a top-up (even i)
				if poisoned {
					key = "poison" + key
				}
				op, err := ledger.TopUp(key, app, int64(10+i), "")
				if i%2 == 1 {
					id := fmt.Sprintf("ch%d-%d", g, i)
					op, err = ledger.EscrowHold("hold:"+id, ledger.Hold{ID: id, Advertiser: app, Publisher: "pub", Amount: int64(5 + g), ChainID: id})
				}
				if !assert.NoError(t, err) {
					return
				}
				res, err := l.Post(ctx, op)
				switch {
				case poisoned:
					assert.ErrorIs(t, err, errPoison, key)
					continue
				case err != nil:
					assert.Equal(t, apperr.InsufficientFunds, apperr.Code(err), "%s: %v", op.Key, err)
					continue
				}
				assert.False(t, res.Replayed, op.Key)
				mu.Lock()
				for _, p := range op.Postings {
					want[p.Account] += p.Amount
				}
				mu.Unlock()
				if i%3 == 0 { // a client's retry replays, writes nothing
					again, err := l.Post(ctx, op)
					if assert.NoError(t, err, op.Key) {
						assert.True(t, again.Replayed, op.Key)
						assert.Equal(t, res.Operation.ID, again.Operation.ID, op.Key)
					}
				}
			}
		})
	}
	wg.Wait()

	assert.Empty(t, s.overlaps[:min(len(s.overlaps), 5)], "accounts held by two transactions in flight (%d)", len(s.overlaps))
	// A poisoned top-up that wrote, or a post that wrote twice, shows here.
	for account, balance := range want {
		assert.Equal(t, balance, must(h.Store.Account(ctx, account)).Balance, account)
	}
	verifyOK(t, h.Store)
}
