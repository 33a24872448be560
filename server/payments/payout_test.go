package payments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// addApp registers an app with a given id and status.
func (f *fixture) addApp(t *testing.T, id string, status xpromo.AppStatus) string {
	t.Helper()
	now := f.clock.Now()
	require.NoError(t, f.store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertApp(ctx, apps.App{ID: id, Name: "Snip " + id, Platform: xpromo.PlatformMac, BundleID: "com.example." + id,
			Domain: "example.com", DownloadURL: "https://example.com/snip.zip", ContactEmail: "dev@example.com",
			Status: status, EarnMode: ledger.EarnCash, CreatedAt: now, UpdatedAt: now})
	}))
	return id
}

func registerApp(t *testing.T, s storage.Store, now time.Time) string {
	t.Helper()
	id := "app_" + fmt.Sprint(now.UnixNano())
	require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertApp(ctx, apps.App{ID: id, Name: "Snip", Platform: xpromo.PlatformMac, BundleID: "com.example.snip",
			Domain: "example.com", DownloadURL: "https://example.com/snip.zip", ContactEmail: "dev@example.com",
			Status: xpromo.AppStatusPending, EarnMode: ledger.EarnCash, CreatedAt: now, UpdatedAt: now})
	}))
	return id
}

// payout reads a payout row.
func (f *fixture) payout(t *testing.T, id string) payments.Payout {
	t.Helper()
	var p payments.Payout
	require.NoError(t, f.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		var found bool
		var err error
		p, found, err = tx.Payout(ctx, id, false)
		require.True(t, found, "payout %s", id)
		return err
	}))
	return p
}

// pendingPayout returns the app's one pending payout (the test knows there
// is one).
func (f *fixture) pendingPayout(t *testing.T, app string) payments.Payout {
	t.Helper()
	var ps []payments.Payout
	err := f.store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		// A claim with no grace sees every pending payout; rolled back.
		var err error
		if ps, err = tx.ClaimStalePayouts(ctx, f.clock.Now(), 0, 100); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	var out []payments.Payout
	for _, p := range ps {
		if p.AppID == app {
			out = append(out, p)
		}
	}
	require.Len(t, out, 1, "pending payouts of %s", app)
	return out[0]
}

var errRollback = errors.New("rolled back on purpose")

// payoutEvents returns the data of the app's payout.sent events, oldest
// first.
func (f *fixture) payoutEvents(t *testing.T, app string) []xpromo.PayoutResponse {
	t.Helper()
	var out []xpromo.PayoutResponse
	require.NoError(t, f.store.View(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		evs, err := tx.AppOutbox(ctx, app)
		for _, e := range evs {
			if e.Type != xpromo.EventPayoutSent {
				continue
			}
			var d xpromo.PayoutEventData
			require.NoError(t, json.Unmarshal(e.Data, &d))
			assert.Equal(t, app, e.AppID)
			out = append(out, d.Payout)
		}
		return err
	}))
	return out
}

func (f *fixture) account(t *testing.T, id string) ledger.Account {
	t.Helper()
	a, err := f.store.Account(context.Background(), id)
	require.NoError(t, err)
	return a
}

// freshService is what a restarted server builds on the same store: a new
// service and a new test provider, sharing nothing in memory with f.svc.
func (f *fixture) freshService(log *slog.Logger) *payments.Service {
	return &payments.Service{
		Update:   storage.Updater[payments.WriteTx](f.store),
		View:     storage.Viewer[payments.Tx](f.store),
		Ledger:   f.store,
		Provider: testProvider(f.store, f.clock),
		TestMode: true,
		Now:      f.clock.Now,
		Log:      log,
	}
}

// logBuffer collects log lines from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLog() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// provider wraps test mode's provider to play what a real processor and a
// crash can do.
type provider struct {
	payments.Provider
	// transfer, when set, replaces Transfer; find, when set, replaces FindTransfer.
	transfer func(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, error)
	find     func(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, bool, error)
}

func (p *provider) Transfer(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, error) {
	if p.transfer != nil {
		return p.transfer(ctx, r)
	}
	return p.Provider.Transfer(ctx, r)
}

func (p *provider) FindTransfer(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, bool, error) {
	if p.find != nil {
		return p.find(ctx, r)
	}
	return p.Provider.FindTransfer(ctx, r)
}

var errTimeout = fmt.Errorf("no answer from the processor: %w", payments.ErrTransferUnknown)

// crashBeforeTransfer is a request that dies after its reservation
// committed, before the provider heard of the transfer.
func crashBeforeTransfer(real payments.Provider) *provider {
	return &provider{Provider: real, transfer: func(context.Context, payments.TransferRequest) (payments.TransferResult, error) {
		return payments.TransferResult{}, errTimeout
	}}
}

// crashAfterTransfer is a request that dies after the provider made the
// transfer, before the settlement committed.
func crashAfterTransfer(real payments.Provider) *provider {
	return &provider{Provider: real, transfer: func(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, error) {
		if _, err := real.Transfer(ctx, r); err != nil {
			return payments.TransferResult{}, err
		}
		return payments.TransferResult{}, errTimeout
	}}
}

// refusing refuses every transfer for good (an account closed).
func refusing(real payments.Provider) *provider {
	return &provider{Provider: real, transfer: func(context.Context, payments.TransferRequest) (payments.TransferResult, error) {
		return payments.TransferResult{}, errors.New("account closed")
	}}
}

// clearingLines are the lines of a payout's clearing account: its
// reservation, then its settlement or return.
func (f *fixture) clearingLines(t *testing.T, payoutID string) []ledger.Line {
	t.Helper()
	lines, err := f.store.Lines(context.Background(), ledger.PayoutClearing(payoutID), ledger.LineQuery{})
	require.NoError(t, err)
	return lines
}

// --- payouts ---

func TestWithdrawable(t *testing.T) {
	tot := []ledger.Total{
		{Type: ledger.TypeTopup, Amount: 100_000},
		{Type: ledger.TypeEarn, EarnMode: ledger.EarnCash, Amount: 9000},
		{Type: ledger.TypeEarn, EarnMode: ledger.EarnCredits, Amount: 5000},
		{Type: ledger.TypePayout, EarnMode: ledger.EarnCash, Amount: -2000},
		{Type: ledger.TypeClawback, EarnMode: ledger.EarnCash, Amount: -1000},
		{Type: ledger.TypeClawback, EarnMode: ledger.EarnCredits, Amount: -700},
		{Type: ledger.TypeAdjustment, Amount: 3000},
	}
	assert.Equal(t, int64(6000), payments.Withdrawable(tot, 1_000_000))
	assert.Equal(t, int64(4000), payments.Withdrawable(tot, 4000), "capped by the balance")
	assert.Equal(t, int64(0), payments.Withdrawable(tot, -10), "never negative")
	assert.Equal(t, int64(0), payments.Withdrawable(nil, 5000))
}

func TestPayoutBelowMinimumWithOnlyTopUps(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		f.addApp(t, "app_a", xpromo.AppStatusLive)
		f.post(t)(ledger.TopUp("topup:1", "app_a", 500_000, ""))
		_, err := f.svc.Payout(context.Background(), "app_a")
		assertCode(t, err, apperr.BelowMinimum, 409)
		assert.Len(t, f.wallet(t, "app_a"), 1)

		// Credits earnings are never withdrawable either.
		f.earn(t, "app_a", 100_000, ledger.EarnCredits)
		_, err = f.svc.Payout(context.Background(), "app_a")
		assertCode(t, err, apperr.BelowMinimum, 409)

		_, err = f.svc.Payout(context.Background(), "app_missing")
		assertCode(t, err, apperr.NotFound, 404)
	})
}

func TestPayoutOfCashEarnings(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.post(t)(ledger.TopUp("topup:pub", "app_pub", 20_000, "")) // not withdrawable
		f.earn(t, "app_pub", 5000, ledger.EarnCash)                 // earns 3500
		_, err := f.svc.Payout(ctx, "app_pub")
		assertCode(t, err, apperr.BelowMinimum, 409)

		f.earn(t, "app_pub", 5000, ledger.EarnCash) // 7000 in all
		p, err := f.svc.Payout(ctx, "app_pub")
		require.NoError(t, err)
		assert.Equal(t, int64(7000), p.AmountCents)
		assert.True(t, strings.HasPrefix(p.TransferID, "tr_test_"), p.TransferID)
		assert.True(t, strings.HasPrefix(p.ID, "po_"), p.ID)
		assert.Equal(t, payments.PayoutSent, p.Status)
		assert.Equal(t, payments.TestPayoutAccount("app_pub"), p.Destination)
		assert.Equal(t, p, f.payout(t, p.ID), "the answer is the stored payout")
		assert.Equal(t, []xpromo.PayoutResponse{{TransferID: p.TransferID, AmountCents: 7000, PayoutID: p.ID}}, f.payoutEvents(t, "app_pub"),
			"payout.sent, once, with the payout as the API answers it")

		// The wallet's one payout line is the reservation, named after the payout.
		lines := f.wallet(t, "app_pub")
		last := lines[len(lines)-1]
		assert.Equal(t, ledger.TypePayout, last.Type)
		assert.Equal(t, int64(-7000), last.Amount)
		assert.Equal(t, "payout "+p.ID, last.Note)
		assert.Equal(t, p.OperationID, last.OperationID)
		assert.Equal(t, int64(20_000), last.BalanceAfter, "the top-up stays in the wallet")

		// The reservation went on to the processor, once, noted with the transfer id.
		cl := f.clearingLines(t, p.ID)
		require.Len(t, cl, 2)
		assert.Equal(t, []int64{7000, -7000}, []int64{cl[0].Amount, cl[1].Amount})
		assert.Equal(t, p.TransferID, cl[1].Note)

		// The transfer is recorded in the store: a restarted server's provider finds it.
		tr, found, err := testProvider(s, f.clock).FindTransfer(ctx, payments.TransferRequest{PayoutID: p.ID, IdempotencyKey: p.ID})
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, p.TransferID, tr.TransferID)

		_, err = f.svc.Payout(ctx, "app_pub")
		assertCode(t, err, apperr.BelowMinimum, 409)
		assert.Len(t, f.payoutEvents(t, "app_pub"), 1, "a refused payout announces nothing")
		f.verify(t)
	})
}

func TestPayoutCappedByBalance(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, "app_pub", 10_000, ledger.EarnCash) // earns 7000
		// The publisher spends 3000 of it advertising.
		f.post(t)(ledger.EscrowHold("hold:spend", ledger.Hold{ID: "hold_spend", Advertiser: "app_pub", Publisher: "app_x", Amount: 3000}))
		_, err := f.svc.Payout(context.Background(), "app_pub")
		assertCode(t, err, apperr.BelowMinimum, 409) // min(7000, 4000) < 5000

		f.earn(t, "app_pub", 10_000, ledger.EarnCash) // earned 14000, balance 11000
		p, err := f.svc.Payout(context.Background(), "app_pub")
		require.NoError(t, err)
		assert.Equal(t, int64(11_000), p.AmountCents)
		assert.Zero(t, f.balance(t, "app_pub"))
		f.verify(t)
	})
}

func TestPayoutRefusedForSuspendedAndRejectedApps(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		for _, st := range []xpromo.AppStatus{xpromo.AppStatusSuspended, xpromo.AppStatusRejected} {
			app := f.addApp(t, "app_"+string(st), st)
			f.earn(t, app, 10_000, ledger.EarnCash)
			_, err := f.svc.Payout(ctx, app)
			assertCode(t, err, apperr.PayoutNotAllowed, 409)
			assert.Contains(t, err.Error(), string(st))
			assert.Equal(t, int64(7000), f.balance(t, app), "nothing reserved")
			assert.Len(t, f.wallet(t, app), 1, "no line but the earnings")
		}
		for _, st := range []xpromo.AppStatus{xpromo.AppStatusPending, xpromo.AppStatusApproved, xpromo.AppStatusThrottled, xpromo.AppStatusLive} {
			app := f.addApp(t, "app_"+string(st), st)
			f.earn(t, app, 10_000, ledger.EarnCash)
			p, err := f.svc.Payout(ctx, app)
			require.NoError(t, err, st)
			assert.Equal(t, int64(7000), p.AmountCents, st)
			assert.Zero(t, f.balance(t, app), st)
		}

		// Suspended after asking: a retry of the same request still gets its answer.
		app := f.addApp(t, "app_later", xpromo.AppStatusLive)
		f.earn(t, app, 10_000, ledger.EarnCash)
		kctx := idempotency.WithRef(ctx, idempotency.Ref{Scope: "app:" + app, Key: "k1"})
		first, err := f.svc.Payout(kctx, app)
		require.NoError(t, err)
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			return tx.SetAppStatus(ctx, app, xpromo.AppStatusSuspended, f.clock.Now())
		}))
		again, err := f.svc.Payout(kctx, app)
		require.NoError(t, err)
		assert.Equal(t, first, again)
		f.earn(t, app, 10_000, ledger.EarnCash)
		_, err = f.svc.Payout(ctx, app)
		assertCode(t, err, apperr.PayoutNotAllowed, 409)
		f.verify(t)
	})
}

func TestPayoutInProgress(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, "app_pub", 10_000, ledger.EarnCash)
		now := f.clock.Now()
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			ok, err := tx.InsertPayout(ctx, payments.Payout{ID: "po_stuck", AppID: "app_pub", AmountCents: 6000,
				Destination: "acct_test_app_pub", Status: payments.PayoutPending, CreatedAt: now, UpdatedAt: now})
			assert.True(t, ok)
			return err
		}))
		_, err := f.svc.Payout(ctx, "app_pub")
		assertCode(t, err, apperr.PayoutInProgress, 409)

		// The index refuses a second pending payout even without the check.
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			ok, err := tx.InsertPayout(ctx, payments.Payout{ID: "po_second", AppID: "app_pub", AmountCents: 6000,
				Destination: "acct_test_app_pub", Status: payments.PayoutPending, CreatedAt: now, UpdatedAt: now})
			assert.False(t, ok)
			return err
		}))
		// And one payout per idempotency key.
		ref := idempotency.Ref{Scope: "app:app_pub", Key: "k"}
		require.NoError(t, s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
			ok, err := tx.InsertPayout(ctx, payments.Payout{ID: "po_other", AppID: "app_other", AmountCents: 6000, Ref: ref,
				Destination: "acct_test_app_other", Status: payments.PayoutPending, CreatedAt: now, UpdatedAt: now})
			require.True(t, ok)
			require.NoError(t, err)
			ok, err = tx.InsertPayout(ctx, payments.Payout{ID: "po_other2", AppID: "app_other2", AmountCents: 6000, Ref: ref,
				Destination: "acct_test_app_other2", Status: payments.PayoutPending, CreatedAt: now, UpdatedAt: now})
			assert.False(t, ok)
			return err
		}))
	})
}

func TestConcurrentPayouts(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, "app_pub", 10_000, ledger.EarnCash)
		const n = 12
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { _, errs[i] = f.svc.Payout(context.Background(), "app_pub") })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
				continue
			}
			c, status := code(t, err)
			assert.Contains(t, []string{apperr.PayoutInProgress, apperr.BelowMinimum}, c)
			assert.Equal(t, 409, status)
		}
		assert.Equal(t, 1, ok, "exactly one payout")
		payouts := 0
		for _, l := range f.wallet(t, "app_pub") {
			if l.Type == ledger.TypePayout {
				payouts++
			}
		}
		assert.Equal(t, 1, payouts)
		assert.Zero(t, f.balance(t, "app_pub"))
		f.verify(t)
	})
}

// TestPayoutsRacingEscrowHolds races payouts of one wallet against escrow
// holds spending it, over random amounts: the wallet never goes below zero,
// every cent is accounted for, and the ledger verifies.
func TestPayoutsRacingEscrowHolds(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 0))
		for round := range 4 {
			f := newFixture(t, s, true)
			ctx := context.Background()
			app := f.addApp(t, fmt.Sprintf("app_r%d_%d", round, seed%1000), xpromo.AppStatusLive)
			f.post(t)(ledger.TopUp("topup:"+app, app, 1000+rng.Int64N(9000), "")) // spendable, not withdrawable
			for range 1 + rng.IntN(3) {
				f.earn(t, app, 5000+rng.Int64N(10_000), ledger.EarnCash)
			}
			start := f.balance(t, app)

			const holders, holdsEach, payers = 4, 6, 3
			amounts := make([][]int64, holders)
			for h := range amounts {
				for range holdsEach {
					amounts[h] = append(amounts[h], 100+rng.Int64N(3000))
				}
			}
			var mu sync.Mutex
			var held, paid int64
			var wg sync.WaitGroup
			l := &ledger.Ledger{Store: s, Now: f.clock.Now}
			for h := range holders {
				wg.Go(func() {
					for i, amount := range amounts[h] {
						id := fmt.Sprintf("hold_%s_%d_%d", app, h, i)
						op := must(ledger.EscrowHold("hold:"+id, ledger.Hold{ID: id, Advertiser: app, Publisher: "app_x", Amount: amount}))
						if _, err := l.Post(ctx, op); err == nil {
							mu.Lock()
							held += amount
							mu.Unlock()
						} else if apperr.Code(err) != apperr.InsufficientFunds {
							t.Errorf("hold: %v", err)
						}
					}
				})
			}
			for range payers {
				wg.Go(func() {
					p, err := f.svc.Payout(ctx, app)
					if err == nil {
						mu.Lock()
						paid += p.AmountCents
						mu.Unlock()
						return
					}
					if c := apperr.Code(err); c != apperr.PayoutInProgress && c != apperr.BelowMinimum {
						t.Errorf("payout: %v", err)
					}
				})
			}
			wg.Wait()

			final := f.balance(t, app)
			assert.GreaterOrEqual(t, final, int64(0))
			assert.Equal(t, start, final+held+paid, "every cent of the wallet is held, paid out or still there")
			assert.Equal(t, held, f.account(t, ledger.Escrow(app)).Balance)
			for _, line := range f.wallet(t, app) {
				assert.GreaterOrEqual(t, line.BalanceAfter, int64(0), "line %s", line.ID)
			}
			f.verify(t)
		}
	})
}

func TestPayoutReservesBeforeTheTransfer(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.post(t)(ledger.TopUp("topup:pub", "app_pub", 2000, ""))
		f.earn(t, "app_pub", 10_000, ledger.EarnCash) // 7000 withdrawable, 9000 in the wallet
		var holdErr error
		real := f.svc.Provider
		f.svc.Provider = &provider{Provider: real, transfer: func(ctx context.Context, r payments.TransferRequest) (payments.TransferResult, error) {
			// While the transfer runs, the app's campaign claims an install:
			// only the 2000 not reserved can be spent.
			_, holdErr = (&ledger.Ledger{Store: s, Now: f.clock.Now}).Post(ctx,
				must(ledger.EscrowHold("hold:during", ledger.Hold{ID: "hold_during", Advertiser: "app_pub", Publisher: "app_x", Amount: 3000})))
			assert.Equal(t, int64(2000), f.balance(t, "app_pub"), "the amount is out of the wallet before the provider is called")
			return real.Transfer(ctx, r)
		}}
		p, err := f.svc.Payout(ctx, "app_pub")
		require.NoError(t, err)
		assert.Equal(t, int64(7000), p.AmountCents)
		assertCode(t, holdErr, apperr.InsufficientFunds, 409)
		assert.Equal(t, int64(2000), f.balance(t, "app_pub"))
		f.verify(t)
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestPayoutAccounts(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, false) // live mode, with the test provider
		ctx := context.Background()
		app := registerApp(t, s, f.clock.Now())
		f.earn(t, app, 10_000, ledger.EarnCash)

		_, err := f.svc.Payout(ctx, app)
		assertCode(t, err, apperr.PayoutAccountMissing, 409)

		assertCode(t, f.svc.SetPayoutAccount(ctx, app, ""), apperr.MissingField, 422)
		assertCode(t, f.svc.SetPayoutAccount(ctx, app, "bank 123"), apperr.InvalidPayoutAccount, 422)
		assertCode(t, f.svc.SetPayoutAccount(ctx, "app_missing", "acct_1"), apperr.NotFound, 404)
		require.NoError(t, f.svc.SetPayoutAccount(ctx, app, "acct_1Nv0FGQ9RKHgCVdK"))

		p, err := f.svc.Payout(ctx, app)
		require.NoError(t, err)
		assert.Equal(t, "acct_1Nv0FGQ9RKHgCVdK", p.Destination)
		assert.Equal(t, int64(7000), p.AmountCents)

		// The operator's action is audited.
		require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			entries, err := tx.AuditPage(ctx, nil, 10)
			require.Len(t, entries, 1)
			assert.Equal(t, "app.payout_account", entries[0].Action)
			assert.Equal(t, app, entries[0].Subject)
			assert.JSONEq(t, `{"from":"","to":"acct_1Nv0FGQ9RKHgCVdK"}`, string(entries[0].Detail))
			return err
		}))

		// In test mode a stored account wins over the implicit one.
		test := newFixture(t, s, true)
		test.clock = f.clock
		test.svc.Now = f.clock.Now
		f.earn(t, app, 10_000, ledger.EarnCash)
		p, err = test.svc.Payout(ctx, app)
		require.NoError(t, err)
		assert.Equal(t, "acct_1Nv0FGQ9RKHgCVdK", p.Destination)
	})
}

func TestPayoutTransferRefused(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, "app_pub", 10_000, ledger.EarnCash)
		good := f.svc.Provider

		f.svc.Provider = refusing(good)
		_, err := f.svc.Payout(ctx, "app_pub")
		assertCode(t, err, apperr.Unavailable, 503)
		assert.Contains(t, err.Error(), "account closed")
		assert.Equal(t, int64(7000), f.balance(t, "app_pub"), "the reservation is back in the wallet")
		lines := f.wallet(t, "app_pub")
		require.Len(t, lines, 3)
		reserve, ret := lines[1], lines[2]
		assert.Equal(t, ledger.TypePayout, reserve.Type)
		assert.Equal(t, int64(-7000), reserve.Amount)
		assert.Equal(t, ledger.TypePayout, ret.Type)
		assert.Equal(t, int64(7000), ret.Amount)
		assert.Contains(t, ret.Note, "returned: account closed")
		assert.Empty(t, f.payoutEvents(t, "app_pub"), "a failed payout is not payout.sent")

		// A refused transfer is final: the app may ask again.
		f.svc.Provider = good
		p, err := f.svc.Payout(ctx, "app_pub")
		require.NoError(t, err)
		assert.Equal(t, int64(7000), p.AmountCents)
		assert.Equal(t, []xpromo.PayoutResponse{p.Wire()}, f.payoutEvents(t, "app_pub"))
		assert.Zero(t, f.balance(t, "app_pub"))
		f.verify(t)
	})
}

func TestPayoutTransferOutcomeUnknown(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, "app_pub", 10_000, ledger.EarnCash)
		log, logs := newLog()
		f.svc.Log = log
		f.svc.Provider = crashBeforeTransfer(f.svc.Provider)
		_, err := f.svc.Payout(ctx, "app_pub")
		assertCode(t, err, apperr.Unavailable, 503)
		p := f.pendingPayout(t, "app_pub")
		assert.Contains(t, logs.String(), "level=ERROR")
		assert.Contains(t, logs.String(), p.ID)
		// The payout stays pending and reserved: asking again could pay twice.
		f.svc.Provider = testProvider(s, f.clock)
		_, err = f.svc.Payout(ctx, "app_pub")
		assertCode(t, err, apperr.PayoutInProgress, 409)
		assert.Zero(t, f.balance(t, "app_pub"), "reserved")
		f.verify(t)
	})
}

// TestRecoveryAfterCrash leaves one payout pending after its reservation
// (the provider never heard of it) and one after its transfer (the
// settlement never committed), then a restarted server's recovery pass
// settles each exactly once.
func TestRecoveryAfterCrash(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		real := f.svc.Provider
		before := f.addApp(t, "app_before", xpromo.AppStatusLive)
		after := f.addApp(t, "app_after", xpromo.AppStatusLive)
		f.earn(t, before, 10_000, ledger.EarnCash)
		f.earn(t, after, 20_000, ledger.EarnCash)

		f.svc.Provider = crashBeforeTransfer(real)
		_, err := f.svc.Payout(ctx, before)
		assertCode(t, err, apperr.Unavailable, 503)
		f.svc.Provider = crashAfterTransfer(real)
		_, err = f.svc.Payout(ctx, after)
		assertCode(t, err, apperr.Unavailable, 503)
		pBefore, pAfter := f.pendingPayout(t, before), f.pendingPayout(t, after)
		transferred, found, err := real.FindTransfer(ctx, payments.TransferRequest{IdempotencyKey: pAfter.ID})
		require.NoError(t, err)
		require.True(t, found, "the second crash came after the transfer")
		_, found, err = real.FindTransfer(ctx, payments.TransferRequest{IdempotencyKey: pBefore.ID})
		require.NoError(t, err)
		require.False(t, found, "the first crash came before it")
		f.verify(t) // a reservation in flight is a consistent ledger

		// The restarted server: a new service and provider on the same store.
		log, logs := newLog()
		svc := f.freshService(log)
		res, err := svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{}, res, "within the grace a pending payout is left to its request")
		assert.Empty(t, f.payoutEvents(t, before), "pending is not sent")
		assert.Empty(t, f.payoutEvents(t, after), "pending is not sent, even once transferred")

		f.clock.Advance(payments.DefaultPayoutGrace + time.Second)
		res, err = svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{Sent: 2}, res)
		got := f.payout(t, pAfter.ID)
		assert.Equal(t, payments.PayoutSent, got.Status)
		assert.Equal(t, transferred.TransferID, got.TransferID, "the transfer made before the crash, not a second one")
		got = f.payout(t, pBefore.ID)
		assert.Equal(t, payments.PayoutSent, got.Status)
		assert.True(t, strings.HasPrefix(got.TransferID, "tr_test_"))
		for _, p := range []payments.Payout{pBefore, pAfter} {
			assert.Contains(t, logs.String(), "payout_id="+p.ID)
			assert.Len(t, f.clearingLines(t, p.ID), 2, "reserved once, settled once")
		}
		assert.Contains(t, logs.String(), "transfer confirmed, payout sent")
		for _, p := range []payments.Payout{pBefore, pAfter} {
			assert.Equal(t, []xpromo.PayoutResponse{f.payout(t, p.ID).Wire()}, f.payoutEvents(t, p.AppID), "the recovery pass announces what it settles")
		}

		// A second pass, later, finds nothing to do.
		f.clock.Advance(time.Hour)
		res, err = svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{}, res)

		// No payout_in_progress any more: new earnings are paid out.
		f.earn(t, before, 10_000, ledger.EarnCash)
		p, err := svc.Payout(ctx, before)
		require.NoError(t, err)
		assert.Equal(t, int64(7000), p.AmountCents)
		assert.Zero(t, f.balance(t, before))
		assert.Zero(t, f.balance(t, after))
		f.verify(t)
	})
}

func TestRecoveryReturnsARefusedPayout(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		app := f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, app, 10_000, ledger.EarnCash)
		f.svc.Provider = crashBeforeTransfer(f.svc.Provider)
		_, err := f.svc.Payout(ctx, app)
		assertCode(t, err, apperr.Unavailable, 503)
		p := f.pendingPayout(t, app)
		assert.Zero(t, f.balance(t, app))

		log, logs := newLog()
		svc := f.freshService(log)
		svc.Provider = refusing(svc.Provider)
		f.clock.Advance(payments.DefaultPayoutGrace + time.Second)
		res, err := svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{Failed: 1}, res)
		got := f.payout(t, p.ID)
		assert.Equal(t, payments.PayoutFailed, got.Status)
		assert.Equal(t, "account closed", got.Failure)
		assert.Equal(t, int64(7000), f.balance(t, app), "the reservation is returned")
		assert.Contains(t, logs.String(), "level=WARN")
		assert.Contains(t, logs.String(), "payout_id="+p.ID)

		// The app can ask again.
		p2, err := f.freshService(nil).Payout(ctx, app)
		require.NoError(t, err)
		assert.Equal(t, int64(7000), p2.AmountCents)
		f.verify(t)
	})
}

func TestRecoveryLeavesAnUnknownOutcomePending(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		app := f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, app, 10_000, ledger.EarnCash)
		f.svc.Provider = crashAfterTransfer(f.svc.Provider)
		_, err := f.svc.Payout(ctx, app)
		assertCode(t, err, apperr.Unavailable, 503)
		p := f.pendingPayout(t, app)

		// The processor is unreachable: nothing is decided.
		log, logs := newLog()
		svc := f.freshService(log)
		real := svc.Provider
		down := func(context.Context, payments.TransferRequest) (payments.TransferResult, bool, error) {
			return payments.TransferResult{}, false, errors.New("connection refused")
		}
		svc.Provider = &provider{Provider: real, find: down}
		f.clock.Advance(payments.DefaultPayoutGrace + time.Second)
		res, err := svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{Pending: 1}, res)
		assert.Equal(t, payments.PayoutPending, f.payout(t, p.ID).Status)
		assert.Contains(t, logs.String(), "level=ERROR")
		assert.Contains(t, logs.String(), "payout_id="+p.ID)
		assert.Contains(t, logs.String(), "connection refused")
		_, err = svc.Payout(ctx, app)
		assertCode(t, err, apperr.PayoutInProgress, 409)

		// The claim stamped it: the next pass within the grace leaves it alone.
		res, err = svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{}, res)

		// The processor is back: the next pass after the grace settles it.
		svc.Provider = real
		f.clock.Advance(payments.DefaultPayoutGrace + time.Second)
		res, err = svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{Sent: 1}, res)
		assert.Equal(t, payments.PayoutSent, f.payout(t, p.ID).Status)
		f.verify(t)
	})
}

// TestConcurrentRecoveries runs several recovery passes (instances) and
// keyed retries at once over many pending payouts: each is settled once.
func TestConcurrentRecoveries(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		const n = 8
		real := f.svc.Provider
		var payouts []payments.Payout
		for i := range n {
			app := f.addApp(t, fmt.Sprintf("app_%d", i), xpromo.AppStatusLive)
			f.earn(t, app, 10_000, ledger.EarnCash)
			f.svc.Provider = crashBeforeTransfer(real)
			if i%2 == 1 {
				f.svc.Provider = crashAfterTransfer(real)
			}
			kctx := idempotency.WithRef(ctx, idempotency.Ref{Scope: "app:" + app, Key: "k"})
			_, err := f.svc.Payout(kctx, app)
			assertCode(t, err, apperr.Unavailable, 503)
			payouts = append(payouts, f.pendingPayout(t, app))
		}
		f.clock.Advance(payments.DefaultPayoutGrace + time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var total payments.RecoveryResult
		for range 3 {
			wg.Go(func() {
				res, err := f.freshService(nil).RecoverPayouts(ctx)
				assert.NoError(t, err)
				mu.Lock()
				total.Sent += res.Sent
				total.Failed += res.Failed
				total.Pending += res.Pending
				mu.Unlock()
			})
		}
		for _, p := range payouts {
			wg.Go(func() {
				kctx := idempotency.WithRef(ctx, idempotency.Ref{Scope: "app:" + p.AppID, Key: "k"})
				got, err := f.freshService(nil).Payout(kctx, p.AppID)
				if assert.NoError(t, err) {
					assert.Equal(t, p.ID, got.ID)
				}
			})
		}
		wg.Wait()
		assert.LessOrEqual(t, total.Sent, n)
		assert.Zero(t, total.Failed+total.Pending)
		for _, p := range payouts {
			got := f.payout(t, p.ID)
			assert.Equal(t, payments.PayoutSent, got.Status)
			tr, found, err := real.FindTransfer(ctx, payments.TransferRequest{IdempotencyKey: p.ID})
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, tr.TransferID, got.TransferID)
			assert.Len(t, f.clearingLines(t, p.ID), 2, "reserved once, settled once")
			assert.Equal(t, []xpromo.PayoutResponse{got.Wire()}, f.payoutEvents(t, p.AppID), "announced once, whoever settled it")
			assert.Zero(t, f.balance(t, p.AppID))
		}
		f.verify(t)
	})
}

// TestIdempotencyKeyAnswersFromItsPayout retries a keyed payout request in
// each state its payout can be left in: the first payout's answer, never a
// second payout.
func TestIdempotencyKeyAnswersFromItsPayout(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		real := f.svc.Provider
		keyed := func(app, key string) context.Context {
			return idempotency.WithRef(ctx, idempotency.Ref{Scope: "app:" + app, Key: key})
		}

		t.Run("sent", func(t *testing.T) {
			app := f.addApp(t, "app_sent", xpromo.AppStatusLive)
			f.earn(t, app, 10_000, ledger.EarnCash)
			first, err := f.svc.Payout(keyed(app, "k1"), app)
			require.NoError(t, err)
			f.earn(t, app, 20_000, ledger.EarnCash) // 14000 more withdrawable
			again, err := f.freshService(nil).Payout(keyed(app, "k1"), app)
			require.NoError(t, err)
			assert.Equal(t, first.ID, again.ID)
			assert.Equal(t, first.TransferID, again.TransferID)
			assert.Equal(t, first.AmountCents, again.AmountCents)
			assert.Equal(t, int64(14_000), f.balance(t, app), "the retry paid nothing more")
			// Another key is another payout.
			other, err := f.svc.Payout(keyed(app, "k2"), app)
			require.NoError(t, err)
			assert.Equal(t, int64(14_000), other.AmountCents)
			assert.NotEqual(t, first.TransferID, other.TransferID)
		})

		for _, c := range []struct {
			name  string
			crash func(payments.Provider) *provider
		}{{"crash before the transfer", crashBeforeTransfer}, {"crash after the transfer", crashAfterTransfer}} {
			t.Run(c.name, func(t *testing.T) {
				app := f.addApp(t, "app_"+strings.ReplaceAll(c.name, " ", "_"), xpromo.AppStatusLive)
				f.earn(t, app, 10_000, ledger.EarnCash)
				f.svc.Provider = c.crash(real)
				_, err := f.svc.Payout(keyed(app, "k1"), app)
				assertCode(t, err, apperr.Unavailable, 503)
				f.svc.Provider = real
				p := f.pendingPayout(t, app)

				// The client retries at once, before any recovery pass: its
				// retry resolves the payout and answers it.
				f.earn(t, app, 10_000, ledger.EarnCash)
				got, err := f.freshService(nil).Payout(keyed(app, "k1"), app)
				require.NoError(t, err)
				assert.Equal(t, p.ID, got.ID)
				assert.Equal(t, int64(7000), got.AmountCents)
				assert.True(t, strings.HasPrefix(got.TransferID, "tr_test_"))
				tr, found, err := real.FindTransfer(ctx, payments.TransferRequest{IdempotencyKey: p.ID})
				require.NoError(t, err)
				require.True(t, found)
				assert.Equal(t, tr.TransferID, got.TransferID)
				assert.Equal(t, int64(7000), f.balance(t, app), "only the first earnings were paid out")

				// Retried again: the same answer.
				again, err := f.freshService(nil).Payout(keyed(app, "k1"), app)
				require.NoError(t, err)
				assert.Equal(t, got, again)
				assert.Len(t, f.clearingLines(t, p.ID), 2)
			})
		}

		t.Run("refused", func(t *testing.T) {
			app := f.addApp(t, "app_refused", xpromo.AppStatusLive)
			f.earn(t, app, 10_000, ledger.EarnCash)
			f.svc.Provider = refusing(real)
			_, first := f.svc.Payout(keyed(app, "k1"), app)
			assertCode(t, first, apperr.Unavailable, 503)
			f.svc.Provider = real
			_, again := f.freshService(nil).Payout(keyed(app, "k1"), app)
			assertCode(t, again, apperr.Unavailable, 503)
			assert.Equal(t, first.Error(), again.Error(), "the same refusal")
			assert.Equal(t, int64(7000), f.balance(t, app), "nothing reserved again")
			assert.Len(t, f.wallet(t, app), 3, "earnings, the reservation and its return: no second payout")
		})
		f.verify(t)
	})
}

func TestTestProviderTransfersAreDurableAndIdempotent(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		p := testProvider(s, f.clock)
		req := payments.TransferRequest{PayoutID: "po_1", AppID: "app_a", Destination: "acct_test_app_a", AmountCents: 5000, Currency: "EUR", IdempotencyKey: "po_1"}
		_, found, err := p.FindTransfer(ctx, req)
		require.NoError(t, err)
		assert.False(t, found)
		a, err := p.Transfer(ctx, req)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(a.TransferID, "tr_test_"))

		// Another provider on the same store (a restarted server) knows it.
		restarted := testProvider(s, f.clock)
		b, err := restarted.Transfer(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, a, b)
		found2, ok, err := restarted.FindTransfer(ctx, req)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, a, found2)

		other := req
		other.PayoutID, other.IdempotencyKey = "po_2", "po_2"
		c, err := p.Transfer(ctx, other)
		require.NoError(t, err)
		assert.NotEqual(t, a, c)

		// A key reused for another amount is refused, as Stripe refuses it.
		changed := req
		changed.AmountCents = 6000
		_, err = p.Transfer(ctx, changed)
		require.Error(t, err)
		assert.False(t, errors.Is(err, payments.ErrTransferUnknown))

		// Concurrent transfers under one key make one transfer.
		third := req
		third.PayoutID, third.IdempotencyKey = "po_3", "po_3"
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				r, err := testProvider(s, f.clock).Transfer(ctx, third)
				assert.NoError(t, err)
				ids[i] = r.TransferID
			})
		}
		wg.Wait()
		for _, id := range ids {
			assert.Equal(t, ids[0], id)
		}
	})
}

// TestRecoveryAfterTheClockWentBack: a payout stamped by a clock ahead of the
// recovering instance's (a test clock advanced before a restart, or a skewed
// instance) is not left pending until that clock is caught up.
func TestRecoveryAfterTheClockWentBack(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		app := f.addApp(t, "app_pub", xpromo.AppStatusLive)
		f.earn(t, app, 10_000, ledger.EarnCash)
		f.clock.Advance(48 * time.Hour)
		f.svc.Provider = crashBeforeTransfer(f.svc.Provider)
		_, err := f.svc.Payout(ctx, app)
		assertCode(t, err, apperr.Unavailable, 503)
		p := f.pendingPayout(t, app)

		svc := f.freshService(nil)
		svc.Now = clocktest.New(start).Now // the restarted server's clock lost the 48 hours
		res, err := svc.RecoverPayouts(ctx)
		require.NoError(t, err)
		assert.Equal(t, payments.RecoveryResult{Sent: 1}, res)
		assert.Equal(t, payments.PayoutSent, f.payout(t, p.ID).Status)
		f.verify(t)
	})
}
