package payments_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// start is where every fixture's clock starts.
var start = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

const baseURL = "http://xpromo.test"

type fixture struct {
	store storage.Store
	clock *clocktest.Clock
	svc   *payments.Service
}

func newFixture(t *testing.T, s storage.Store, testMode bool) *fixture {
	t.Helper()
	c := clocktest.New(start)
	x402, err := payments.NewX402Config(true, "", "", "")
	require.NoError(t, err)
	return &fixture{store: s, clock: c, svc: &payments.Service{
		Update:   storage.Updater[payments.WriteTx](s),
		View:     storage.Viewer[payments.Tx](s),
		Ledger:   s,
		Provider: testProvider(s, c),
		TestMode: testMode,
		X402:     x402,
		Now:      c.Now,
	}}
}

// testProvider is test mode's provider, recording its transfers in s.
func testProvider(s storage.Store, c *clocktest.Clock) *payments.TestProvider {
	return &payments.TestProvider{
		BaseURL: baseURL,
		Update:  storage.Updater[payments.TestTransferTx](s),
		View:    storage.Viewer[payments.TestTransferTx](s),
		Now:     c.Now,
	}
}

// post posts an operation directly to the ledger (the other domains' side:
// holds and clearing).
func (f *fixture) post(t *testing.T) func(op ledger.Operation, err error) ledger.Result {
	return func(op ledger.Operation, err error) ledger.Result {
		t.Helper()
		require.NoError(t, err)
		l := &ledger.Ledger{Store: f.store, Now: f.clock.Now}
		res, err := l.Post(context.Background(), op)
		require.NoError(t, err)
		return res
	}
}

func (f *fixture) wallet(t *testing.T, app string) []ledger.Line {
	t.Helper()
	lines, err := f.store.Lines(context.Background(), ledger.Wallet(app), ledger.LineQuery{})
	require.NoError(t, err)
	return lines
}

func (f *fixture) balance(t *testing.T, app string) int64 {
	t.Helper()
	a, err := f.store.Account(context.Background(), ledger.Wallet(app))
	require.NoError(t, err)
	return a.Balance
}

func (f *fixture) verify(t *testing.T) {
	t.Helper()
	var rep ledger.Report
	require.NoError(t, f.store.Snapshot(context.Background(), func(r ledger.Reader) error {
		var err error
		rep, err = ledger.Verify(context.Background(), r)
		return err
	}))
	assert.True(t, rep.OK(), "ledger verify: %v", rep.Violations)
}

// earn gives publisher cash (or credits) earnings from a cleared install of
// price cents bought by a fresh advertiser.
func (f *fixture) earn(t *testing.T, publisher string, price int64, mode ledger.EarnMode) {
	t.Helper()
	adv := "adv_" + publisher + fmt.Sprint(f.clock.Now().UnixNano())
	f.post(t)(ledger.TopUp("topup:"+adv, adv, price, "seed"))
	chain := "chn_" + adv
	h := ledger.Hold{ID: "hold_" + chain, Advertiser: adv, Publisher: publisher, Amount: price, ChainID: chain}
	f.post(t)(ledger.EscrowHold("hold:"+chain, h))
	f.post(t)(ledger.Clear("clear:"+chain, h, mode))
	f.clock.Advance(time.Second)
}

func code(t *testing.T, err error) (string, int) {
	t.Helper()
	require.Error(t, err)
	var e *apperr.Error
	require.True(t, errors.As(err, &e), "not an application error: %v", err)
	return e.Code, apperr.HTTPStatus(err)
}

func assertCode(t *testing.T, err error, wantCode string, wantStatus int) {
	t.Helper()
	c, s := code(t, err)
	assert.Equal(t, wantCode, c, "%v", err)
	assert.Equal(t, wantStatus, s, "%v", err)
}

func TestTopUpValidation(t *testing.T) {
	for _, c := range []struct {
		amount int64
		code   string
	}{
		{-1, apperr.BelowMinimum}, {0, apperr.BelowMinimum}, {4999, apperr.BelowMinimum},
		{5000, ""}, {10_000_000, ""}, {10_000_001, apperr.InvalidAmount},
	} {
		err := payments.ValidateTopUp(c.amount)
		if c.code == "" {
			assert.NoError(t, err, c.amount)
			continue
		}
		assertCode(t, err, c.code, 422)
		var e *apperr.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "amount_cents", e.Field)
	}
}

func TestTopUpOpensCheckout(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		sess, checkoutURL, err := f.svc.TopUp(ctx, "app_a", 12345)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(sess.ID, "cs_"), sess.ID)
		assert.Equal(t, baseURL+"/test/checkout/"+sess.ID, checkoutURL)
		assert.Equal(t, payments.CheckoutOpen, sess.Status)
		assert.Equal(t, f.clock.Now().Add(24*time.Hour), sess.ExpiresAt)

		got, err := f.svc.TestCheckout(ctx, sess.ID)
		require.NoError(t, err)
		assert.Equal(t, sess, got, "the stored session reads back unchanged")
		assert.Equal(t, "test", got.Provider)
		assert.Zero(t, f.balance(t, "app_a"), "nothing is credited before the checkout completes")

		_, _, err = f.svc.TopUp(ctx, "app_a", 4999)
		assertCode(t, err, apperr.BelowMinimum, 422)
	})
}

func TestCompleteTestCheckoutCreditsOnce(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		sess, _, err := f.svc.TopUp(ctx, "app_a", 5000)
		require.NoError(t, err)
		f.clock.Advance(time.Minute)

		done, err := f.svc.CompleteTestCheckout(ctx, sess.ID)
		require.NoError(t, err)
		assert.Equal(t, payments.CheckoutCompleted, done.Status)
		assert.NotEmpty(t, done.OperationID)
		assert.Equal(t, f.clock.Now(), done.CompletedAt)

		again, err := f.svc.CompleteTestCheckout(ctx, sess.ID)
		require.NoError(t, err)
		assert.Equal(t, done, again, "completing twice answers the same result")

		lines := f.wallet(t, "app_a")
		require.Len(t, lines, 1)
		assert.Equal(t, ledger.TypeTopup, lines[0].Type)
		assert.Equal(t, int64(5000), lines[0].Amount)
		assert.Equal(t, int64(5000), lines[0].BalanceAfter)
		assert.Equal(t, "checkout "+sess.ID, lines[0].Note)
		assert.Equal(t, done.OperationID, lines[0].OperationID)

		page, err := f.svc.TestCheckout(ctx, sess.ID)
		require.NoError(t, err)
		assert.Equal(t, payments.CheckoutCompleted, page.Status)
		f.verify(t)
	})
}

func TestConcurrentCompletions(t *testing.T) {
	for _, n := range []int{2, 20} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			storagetest.Each(t, func(t *testing.T, s storage.Store) {
				f := newFixture(t, s, true)
				ctx := context.Background()
				sess, _, err := f.svc.TopUp(ctx, "app_a", 7500)
				require.NoError(t, err)
				results := make([]payments.CheckoutSession, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() { results[i], errs[i] = f.svc.CompleteTestCheckout(ctx, sess.ID) })
				}
				wg.Wait()
				for i := range n {
					require.NoError(t, errs[i])
					assert.Equal(t, results[0], results[i])
				}
				assert.Equal(t, payments.CheckoutCompleted, results[0].Status)
				lines := f.wallet(t, "app_a")
				require.Len(t, lines, 1, "exactly one topup line")
				assert.Equal(t, int64(7500), f.balance(t, "app_a"))
				f.verify(t)
			})
		})
	}
}

func TestExpiredCheckout(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		sess, _, err := f.svc.TopUp(ctx, "app_a", 5000)
		require.NoError(t, err)
		f.clock.Advance(24 * time.Hour) // now == expires_at: expired

		page, err := f.svc.TestCheckout(ctx, sess.ID)
		require.NoError(t, err)
		assert.Equal(t, payments.CheckoutExpired, page.Status)

		_, err = f.svc.CompleteTestCheckout(ctx, sess.ID)
		assertCode(t, err, apperr.CheckoutExpired, 409)
		_, err = f.svc.CompleteTestCheckout(ctx, sess.ID)
		assertCode(t, err, apperr.CheckoutExpired, 409)
		assert.Empty(t, f.wallet(t, "app_a"))

		// The expiry was recorded.
		require.NoError(t, s.View(ctx, func(ctx context.Context, tx storage.Tx) error {
			got, found, err := tx.CheckoutSession(ctx, sess.ID, false)
			require.True(t, found)
			assert.Equal(t, payments.CheckoutExpired, got.Status)
			assert.True(t, got.CompletedAt.IsZero())
			return err
		}))

		_, err = f.svc.CompleteTestCheckout(ctx, "cs_missing")
		assertCode(t, err, apperr.NotFound, 404)
		_, err = f.svc.TestCheckout(ctx, "cs_missing")
		assertCode(t, err, apperr.NotFound, 404)
	})
}

func TestCheckoutJustBeforeExpiry(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		sess, _, err := f.svc.TopUp(ctx, "app_a", 5000)
		require.NoError(t, err)
		f.clock.Advance(24*time.Hour - time.Microsecond)
		_, err = f.svc.CompleteTestCheckout(ctx, sess.ID)
		require.NoError(t, err)
		assert.Equal(t, int64(5000), f.balance(t, "app_a"))
	})
}

func TestTestCheckoutIsTestModeOnly(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		test := newFixture(t, s, true)
		sess, _, err := test.svc.TopUp(context.Background(), "app_a", 5000)
		require.NoError(t, err)
		live := newFixture(t, s, false)
		_, err = live.svc.TestCheckout(context.Background(), sess.ID)
		assertCode(t, err, apperr.TestModeOnly, 403)
		_, err = live.svc.CompleteTestCheckout(context.Background(), sess.ID)
		assertCode(t, err, apperr.TestModeOnly, 403)
		assert.Empty(t, test.wallet(t, "app_a"))
	})
}

// --- ledger pages ---

func query(t *testing.T, app string, kv ...string) (payments.LedgerQuery, error) {
	t.Helper()
	v := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return payments.ParseLedgerQuery(app, v)
}

func TestLedgerQueryErrors(t *testing.T) {
	for _, c := range []struct {
		kv   []string
		code string
	}{
		{[]string{"from", "2026-13-01"}, apperr.InvalidDate},
		{[]string{"from", "2026-02-30"}, apperr.InvalidDate},
		{[]string{"to", "2026-1-5"}, apperr.InvalidDate},
		{[]string{"to", "yesterday"}, apperr.InvalidDate},
		{[]string{"to", ""}, apperr.InvalidDate},
		{[]string{"from", "2026-11-21T00:00:00Z"}, apperr.InvalidDate},
		{[]string{"from", "2026-11-22", "to", "2026-11-21"}, apperr.InvalidRange},
		{[]string{"limit", "0"}, apperr.InvalidLimit},
		{[]string{"limit", "1001"}, apperr.InvalidLimit},
		{[]string{"limit", "ten"}, apperr.InvalidLimit},
		{[]string{"limit", ""}, apperr.InvalidLimit},
		{[]string{"limit", "+5"}, apperr.InvalidLimit},
		{[]string{"limit", "5.0"}, apperr.InvalidLimit},
		{[]string{"cursor", ""}, apperr.InvalidCursor},
		{[]string{"cursor", "!!!"}, apperr.InvalidCursor},
		{[]string{"cursor", base64.RawURLEncoding.EncodeToString([]byte("app_a:0"))}, apperr.InvalidCursor},
		{[]string{"cursor", base64.RawURLEncoding.EncodeToString([]byte("app_a:x"))}, apperr.InvalidCursor},
		{[]string{"cursor", base64.RawURLEncoding.EncodeToString([]byte("app_a"))}, apperr.InvalidCursor},
		{[]string{"cursor", base64.RawURLEncoding.EncodeToString([]byte("app_b:3"))}, apperr.InvalidCursor},
	} {
		_, err := query(t, "app_a", c.kv...)
		assertCode(t, err, c.code, 422)
	}
	q, err := query(t, "app_a", "from", "2026-11-21", "to", "2026-11-21", "limit", "1000")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), q.From)
	assert.Equal(t, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), q.Before, "to is inclusive")
	assert.Equal(t, 1000, q.Limit)
	q, err = query(t, "app_a")
	require.NoError(t, err)
	assert.Equal(t, payments.LedgerQuery{Limit: 100}, q)
}

func TestLedgerPages(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		f := newFixture(t, s, true)
		ctx := context.Background()
		// Seven top-ups over four days: 21 Nov 09:00, 15:00, 21:00; 22 Nov
		// 03:00, …; the last at 22 Nov 21:00 + … (every 6 hours).
		var want []int64
		for i := range 7 {
			amount := int64(5000 + i)
			f.post(t)(ledger.TopUp(fmt.Sprintf("topup:%d", i), "app_a", amount, ""))
			want = append(want, amount)
			f.clock.Advance(6 * time.Hour)
		}
		f.post(t)(ledger.TopUp("topup:other", "app_b", 9999, "")) // another wallet

		// Walk every page of 2.
		var got []int64
		var seqs []int64
		cursor := ""
		pages := 0
		for {
			kv := []string{"limit", "2"}
			if cursor != "" {
				kv = append(kv, "cursor", cursor)
			}
			q, err := query(t, "app_a", kv...)
			require.NoError(t, err)
			lines, next, err := f.svc.LedgerPage(ctx, "app_a", q)
			require.NoError(t, err)
			pages++
			for _, l := range lines {
				got = append(got, l.Amount)
				seqs = append(seqs, l.Seq)
				assert.Equal(t, ledger.Wallet("app_a"), l.Account)
			}
			if next == "" {
				assert.Len(t, lines, 1, "the last page holds the remainder")
				break
			}
			assert.Len(t, lines, 2)
			cursor = next
			require.Less(t, pages, 10)
		}
		assert.Equal(t, 4, pages)
		assert.Equal(t, want, got)
		assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7}, seqs)

		// A page exactly as long as what is left has no next cursor.
		q, err := query(t, "app_a", "limit", "7")
		require.NoError(t, err)
		lines, next, err := f.svc.LedgerPage(ctx, "app_a", q)
		require.NoError(t, err)
		assert.Len(t, lines, 7)
		assert.Empty(t, next)

		// Another app's cursor is refused.
		q, err = query(t, "app_b", "limit", "1")
		require.NoError(t, err)
		_, next, err = f.svc.LedgerPage(ctx, "app_b", q)
		require.NoError(t, err)
		assert.Empty(t, next)
		_, err = query(t, "app_b", "cursor", cursor)
		assertCode(t, err, apperr.InvalidCursor, 422)

		// Dates: lines at 21 Nov 09, 15, 21; 22 Nov 03, 09, 15, 21; 23 Nov
		// none (the clock moved on but nothing was posted).
		amounts := func(kv ...string) []int64 {
			q, err := query(t, "app_a", kv...)
			require.NoError(t, err)
			lines, _, err := f.svc.LedgerPage(ctx, "app_a", q)
			require.NoError(t, err)
			out := []int64{}
			for _, l := range lines {
				out = append(out, l.Amount)
			}
			return out
		}
		assert.Equal(t, []int64{5000, 5001, 5002}, amounts("to", "2026-11-21"))
		assert.Equal(t, []int64{5003, 5004, 5005, 5006}, amounts("from", "2026-11-22"))
		assert.Equal(t, []int64{5003, 5004, 5005, 5006}, amounts("from", "2026-11-22", "to", "2026-11-22"))
		assert.Equal(t, want, amounts("from", "2026-11-21", "to", "2026-11-23"))
		assert.Equal(t, []int64{}, amounts("from", "2026-11-23"))
		assert.Equal(t, []int64{}, amounts("to", "2026-11-20"))
		// Cursor and dates together.
		q, err = query(t, "app_a", "from", "2026-11-22", "limit", "3")
		require.NoError(t, err)
		lines, next, err = f.svc.LedgerPage(ctx, "app_a", q)
		require.NoError(t, err)
		require.Len(t, lines, 3)
		require.NotEmpty(t, next)
		assert.Equal(t, []int64{5006}, amounts("from", "2026-11-22", "limit", "3", "cursor", next))
	})
}

// --- x402 ---

func TestX402Config(t *testing.T) {
	c, err := payments.NewX402Config(true, "", "", "")
	require.NoError(t, err)
	assert.Equal(t, "base-sepolia", c.Network)
	assert.Equal(t, payments.ZeroAddress, c.PayTo)
	assert.Equal(t, "50000000", c.AtomicUSDC(5000), "EUR 50 at 1.00 = 50 USDC")

	c, err = payments.NewX402Config(true, "base-sepolia", "0x1111111111111111111111111111111111111111", "1.08")
	require.NoError(t, err)
	assert.Equal(t, "54000000", c.AtomicUSDC(5000))
	assert.Equal(t, "54000", c.AtomicUSDC(5)) // 5 × 10⁴ × 1.08, exactly
	c, err = payments.NewX402Config(true, "", "0x1111111111111111111111111111111111111111", "1.0800001")
	require.NoError(t, err)
	assert.Equal(t, "54001", c.AtomicUSDC(5), "rounded up, never down") // 54000.0005

	_, err = payments.NewX402Config(true, "base", "0x1111111111111111111111111111111111111111", "")
	assert.Error(t, err, "test mode pays on the testnet only")
	_, err = payments.NewX402Config(true, "polygon", "", "")
	assert.Error(t, err)
	_, err = payments.NewX402Config(true, "", "0x123", "")
	assert.Error(t, err)
	_, err = payments.NewX402Config(true, "", "", "-1")
	assert.Error(t, err)
	_, err = payments.NewX402Config(true, "", "", "lots")
	assert.Error(t, err)
	_, err = payments.NewX402Config(false, "", "0x1111111111111111111111111111111111111111", "")
	assert.Error(t, err, "live mode names its network")
	c, err = payments.NewX402Config(false, "base", "0x1111111111111111111111111111111111111111", "")
	require.NoError(t, err)
	assert.Equal(t, "base", c.Network)
}

func TestX402Challenge(t *testing.T) {
	c, err := payments.NewX402Config(true, "", "0x2222222222222222222222222222222222222222", "1.1")
	require.NoError(t, err)
	svc := &payments.Service{X402: c}
	ch := svc.X402Challenge("https://api.example/v1/apps/app_a/top-up", "app_a", 5000, payments.X402PaymentRequired)
	assert.Equal(t, 1, ch.X402Version)
	assert.Equal(t, "https://api.example/v1/apps/app_a/top-up", ch.Resource)
	assert.Equal(t, "X-PAYMENT header is required", ch.Error)
	require.Len(t, ch.Accepts, 1)
	a := ch.Accepts[0]
	assert.Equal(t, "exact", a.Scheme)
	assert.Equal(t, "base-sepolia", a.Network)
	assert.Equal(t, "55000000", a.MaxAmountRequired)
	assert.Equal(t, ch.Resource, a.Resource)
	assert.Equal(t, "0x2222222222222222222222222222222222222222", a.PayTo)
	assert.Equal(t, "0x036CbD53842c5426634e7929541eC2318f3dCF7e", a.Asset)
	assert.Equal(t, xpromo.X402Extra{Name: "USDC", Version: "2"}, a.Extra)
	assert.Equal(t, 300, a.MaxTimeoutSeconds)
	assert.Equal(t, "application/json", a.MimeType)
	assert.Contains(t, a.Description, "EUR 50.00")

	live, err := payments.NewX402Config(false, "base", "0x2222222222222222222222222222222222222222", "")
	require.NoError(t, err)
	a = (&payments.Service{X402: live}).X402Challenge("https://x", "app_a", 5000, "").Accepts[0]
	assert.Equal(t, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", a.Asset)
	assert.Equal(t, xpromo.X402Extra{Name: "USD Coin", Version: "2"}, a.Extra, "Base mainnet USDC signs as \"USD Coin\"")
}
