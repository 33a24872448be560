package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/storage"
)

// Lists runs the suite of the dashboard's list reads (apps.ListTx,
// attribution.ListTx, payments.ListTx, the complaints' cursor) on a fresh
// store from newStore: the sqlite and postgres packages call it from their
// tests. Each list is read page by page through its cursor, with ties on
// created_at broken by id, and must give every row once in order.
func Lists(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("Apps", func(t *testing.T) { testAppPage(t, newStore(t)) })
	t.Run("APIKeys", func(t *testing.T) { testAPIKeyList(t, newStore(t)) })
	t.Run("Audit", func(t *testing.T) { testAuditPage(t, newStore(t)) })
	t.Run("Complaints", func(t *testing.T) { testComplaintPage(t, newStore(t)) })
	t.Run("Chains", func(t *testing.T) { testChainPage(t, newStore(t)) })
	t.Run("Payouts", func(t *testing.T) { testPayoutPage(t, newStore(t)) })
	t.Run("Balance", func(t *testing.T) { testLedgerBalance(t, newStore(t)) })
}

// walk reads a list two rows a page, following the position of each page's
// last row, and returns the ids in the order read.
func walk[T any](t *testing.T, s storage.Store, read func(ctx context.Context, tx storage.Tx, after *cursor.Position, limit int) ([]T, error), pos func(T) cursor.Position, id func(T) string) []string {
	t.Helper()
	var out []string
	var after *cursor.Position
	for range 100 {
		var page []T
		require.NoError(t, s.View(context.Background(), func(ctx context.Context, tx storage.Tx) (err error) {
			page, err = read(ctx, tx, after, 2)
			return err
		}))
		for _, it := range page {
			out = append(out, id(it))
		}
		if len(page) < 2 {
			return out
		}
		p := pos(page[len(page)-1])
		after = &p
	}
	t.Fatal("the list did not end")
	return nil
}

func testAppPage(t *testing.T, s storage.Store) {
	// Five apps: two share a creation time (id breaks the tie), statuses mixed.
	statuses := []xpromo.AppStatus{xpromo.AppStatusPending, xpromo.AppStatusLive, xpromo.AppStatusPending, xpromo.AppStatusPending, xpromo.AppStatusRejected}
	at := []time.Time{whStart, whStart.Add(time.Minute), whStart.Add(time.Minute), whStart.Add(2 * time.Minute), whStart.Add(3 * time.Minute)}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for i, st := range statuses {
			id := fmt.Sprintf("app_%d", i)
			if err := tx.InsertApp(ctx, apps.App{ID: id, Name: id, Platform: xpromo.PlatformMac, BundleID: "com.example." + id,
				Domain: "example.com", DownloadURL: "https://example.com/a.zip", ContactEmail: "dev@example.com",
				Status: st, EarnMode: ledger.EarnCash, CreatedAt: at[i], UpdatedAt: at[i]}); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(status xpromo.AppStatus) []string {
		return walk(t, s, func(ctx context.Context, tx storage.Tx, after *cursor.Position, limit int) ([]apps.App, error) {
			return tx.AppPage(ctx, apps.AppQuery{Status: status, After: after, Limit: limit})
		}, func(a apps.App) cursor.Position { return cursor.Position{CreatedAt: a.CreatedAt, ID: a.ID} }, func(a apps.App) string { return a.ID })
	}
	assert.Equal(t, []string{"app_0", "app_1", "app_2", "app_3", "app_4"}, list(""), "oldest first")
	assert.Equal(t, []string{"app_0", "app_2", "app_3"}, list(xpromo.AppStatusPending), "the review queue")
	assert.Empty(t, list(xpromo.AppStatusSuspended))
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.AppPage(ctx, apps.AppQuery{Limit: 1})
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, "com.example.app_0", got[0].BundleID, "a listed app is read whole")
		assert.True(t, got[0].CreatedAt.Equal(whStart))
		return nil
	})
}

func testAPIKeyList(t *testing.T, s storage.Store) {
	whApp(t, s, "app_k")
	whApp(t, s, "app_o")
	exp := whStart.Add(24 * time.Hour)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for i, k := range []apps.APIKey{
			{Hash: fmt.Sprintf("%064x", 1), AppID: "app_k", Prefix: "xp_test_aaaa", CreatedAt: whStart, ExpiresAt: &exp},
			{Hash: fmt.Sprintf("%064x", 2), AppID: "app_k", Prefix: "xp_test_bbbb", CreatedAt: whStart.Add(time.Hour)},
			{Hash: fmt.Sprintf("%064x", 3), AppID: "app_o", Prefix: "xp_test_cccc", CreatedAt: whStart},
		} {
			if err := tx.InsertAPIKey(ctx, k); err != nil {
				return fmt.Errorf("key %d: %w", i, err)
			}
		}
		return nil
	})
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		keys, err := tx.AppAPIKeys(ctx, "app_k", 10)
		require.NoError(t, err)
		require.Len(t, keys, 2, "only the app's own keys")
		assert.Equal(t, "xp_test_bbbb", keys[0].Prefix, "newest first")
		assert.Nil(t, keys[0].ExpiresAt)
		require.NotNil(t, keys[1].ExpiresAt)
		assert.True(t, keys[1].ExpiresAt.Equal(exp))
		assert.Empty(t, keys[0].Hash, "the hash is never read back")
		one, err := tx.AppAPIKeys(ctx, "app_k", 1)
		require.NoError(t, err)
		assert.Len(t, one, 1)
		return nil
	})
}

func testAuditPage(t *testing.T, s storage.Store) {
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for i := range 5 {
			// Written in id order z…v, so seq (not id) is the order.
			if err := tx.InsertAdminAudit(ctx, apps.AuditEntry{ID: fmt.Sprintf("aud_%c", 'z'-i), Actor: "admin", Action: "app.approve",
				Subject: "app_1", Detail: []byte(`{}`), At: whStart}); err != nil {
				return err
			}
		}
		return nil
	})
	got := walk(t, s, func(ctx context.Context, tx storage.Tx, after *cursor.Position, limit int) ([]apps.AuditEntry, error) {
		return tx.AuditPage(ctx, after, limit)
	}, func(e apps.AuditEntry) cursor.Position { return cursor.Position{CreatedAt: e.At, ID: e.ID} }, func(e apps.AuditEntry) string { return e.ID })
	assert.Equal(t, []string{"aud_v", "aud_w", "aud_x", "aud_y", "aud_z"}, got, "newest written first")
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		none, err := tx.AuditPage(ctx, &cursor.Position{ID: "aud_unknown"}, 10)
		require.NoError(t, err)
		assert.Empty(t, none, "a cursor naming no entry reads nothing")
		return nil
	})
}

func testComplaintPage(t *testing.T, s storage.Store) {
	for _, id := range []string{"app_r1", "app_r2", "app_r3", "app_x"} {
		whApp(t, s, id)
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for i, r := range []string{"app_r1", "app_r2", "app_r3"} {
			if err := tx.InsertComplaint(ctx, complaints.Complaint{ID: fmt.Sprintf("cmpl_%d", i), ReporterID: r, AppID: "app_x",
				Reason: complaints.Reason("fraud"), Status: complaints.Open, CreatedAt: whStart.Add(time.Duration(i/2) * time.Minute)}); err != nil {
				return err
			}
		}
		return nil
	})
	got := walk(t, s, func(ctx context.Context, tx storage.Tx, after *cursor.Position, limit int) ([]complaints.Complaint, error) {
		return tx.Complaints(ctx, "", after, limit)
	}, func(c complaints.Complaint) cursor.Position { return cursor.Position{CreatedAt: c.CreatedAt, ID: c.ID} }, func(c complaints.Complaint) string { return c.ID })
	assert.Equal(t, []string{"cmpl_2", "cmpl_1", "cmpl_0"}, got)
	open := walk(t, s, func(ctx context.Context, tx storage.Tx, after *cursor.Position, limit int) ([]complaints.Complaint, error) {
		return tx.Complaints(ctx, complaints.Open, after, limit)
	}, func(c complaints.Complaint) cursor.Position { return cursor.Position{CreatedAt: c.CreatedAt, ID: c.ID} }, func(c complaints.Complaint) string { return c.ID })
	assert.Equal(t, got, open)
}

func testChainPage(t *testing.T, s storage.Store) {
	for _, id := range []string{"app_me", "app_p", "app_a"} {
		whApp(t, s, id)
	}
	type row struct {
		id, pub, adv, campaign string
		state                  attribution.State
		min                    int
	}
	rows := []row{
		{"ch_1", "app_me", "app_a", "cmp_a", attribution.StateClicked, 0},
		{"ch_2", "app_p", "app_me", "cmp_me", attribution.StateInstalled, 1},
		{"ch_3", "app_me", "app_a", "cmp_a", attribution.StateCleared, 1}, // same instant as ch_2
		{"ch_4", "app_p", "app_a", "cmp_x", attribution.StateCleared, 2},  // not the app's
		{"ch_5", "app_p", "app_me", "cmp_me", attribution.StateCleared, 3},
	}
	// The campaigns' owners: a campaign filter reads the owner's side.
	for id, app := range map[string]string{"cmp_a": "app_a", "cmp_me": "app_me", "cmp_x": "app_a"} {
		insertCampaign(t, s, market.Campaign{ID: id, AppID: app, Categories: []string{"games"}, DailyBudgetCents: 1000,
			Status: xpromo.CampaignStatusActive, CreatedAt: whStart, UpdatedAt: whStart})
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		for _, r := range rows {
			at := whStart.Add(time.Duration(r.min) * time.Minute)
			if _, err := tx.InsertChain(ctx, attribution.Chain{ID: r.id, Nonce: "n" + r.id, State: r.state, CampaignID: r.campaign,
				PublisherAppID: r.pub, AdvertiserAppID: r.adv, Platform: xpromo.PlatformMac, ClickToken: "tok." + r.id,
				ClickedAt: at, CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(q attribution.ChainQuery) []string {
		q.AppID = "app_me"
		return walk(t, s, func(ctx context.Context, tx storage.Tx, after *cursor.Position, limit int) ([]attribution.Chain, error) {
			q := q
			q.After, q.Limit = after, limit
			return tx.ChainPage(ctx, q)
		}, func(c attribution.Chain) cursor.Position { return cursor.Position{CreatedAt: c.CreatedAt, ID: c.ID} }, func(c attribution.Chain) string { return c.ID })
	}
	assert.Equal(t, []string{"ch_5", "ch_3", "ch_2", "ch_1"}, list(attribution.ChainQuery{}), "either side, newest first")
	assert.Equal(t, []string{"ch_3", "ch_1"}, list(attribution.ChainQuery{Role: attribution.RolePublisher}))
	assert.Equal(t, []string{"ch_5", "ch_2"}, list(attribution.ChainQuery{Role: attribution.RoleAdvertiser}))
	assert.Equal(t, []string{"ch_5", "ch_3"}, list(attribution.ChainQuery{State: attribution.StateCleared}))
	assert.Equal(t, []string{"ch_5", "ch_2"}, list(attribution.ChainQuery{CampaignID: "cmp_me"}))
	assert.Empty(t, list(attribution.ChainQuery{CampaignID: "cmp_x"}), "another app's campaign matches nothing")
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		got, err := tx.ChainPage(ctx, attribution.ChainQuery{AppID: "app_me", Limit: 1})
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, "tok.ch_5", got[0].ClickToken, "a listed chain is read whole")
		return nil
	})
}

func testPayoutPage(t *testing.T, s storage.Store) {
	whApp(t, s, "app_w")
	whApp(t, s, "app_o")
	// One pending payout at a time: each is failed before the next.
	for i := range 3 {
		at := whStart.Add(time.Duration(i/2) * time.Hour)
		p := payments.Payout{ID: fmt.Sprintf("po_%d", i), AppID: "app_w", AmountCents: 5000 + int64(i), Destination: "acct_test",
			Status: payments.PayoutPending, OperationID: "op_" + fmt.Sprint(i), CreatedAt: at, UpdatedAt: at}
		update(t, s, func(ctx context.Context, tx storage.Tx) error {
			if ok, err := tx.InsertPayout(ctx, p); err != nil || !ok {
				return fmt.Errorf("insert %s: %v %w", p.ID, ok, err)
			}
			if i == 2 {
				return nil
			}
			p.Status, p.Failure, p.UpdatedAt = payments.PayoutFailed, "refused", at.Add(time.Minute)
			return tx.FinishPayout(ctx, p)
		})
	}
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, err := tx.InsertPayout(ctx, payments.Payout{ID: "po_other", AppID: "app_o", AmountCents: 5000, Destination: "acct_test",
			Status: payments.PayoutPending, CreatedAt: whStart, UpdatedAt: whStart})
		return err
	})
	got := walk(t, s, func(ctx context.Context, tx storage.Tx, after *cursor.Position, limit int) ([]payments.Payout, error) {
		return tx.PayoutPage(ctx, "app_w", after, limit)
	}, func(p payments.Payout) cursor.Position { return cursor.Position{CreatedAt: p.CreatedAt, ID: p.ID} }, func(p payments.Payout) string { return p.ID })
	assert.Equal(t, []string{"po_2", "po_1", "po_0"}, got)
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		page, err := tx.PayoutPage(ctx, "app_w", nil, 10)
		require.NoError(t, err)
		require.Len(t, page, 3)
		assert.Equal(t, payments.PayoutPending, page[0].Status)
		assert.Equal(t, payments.PayoutFailed, page[1].Status)
		assert.Equal(t, "refused", page[1].Failure)
		assert.Equal(t, int64(5001), page[1].AmountCents)
		return nil
	})
}

func testLedgerBalance(t *testing.T, s storage.Store) {
	whApp(t, s, "app_b")
	op, err := ledger.TopUp("topup:b", "app_b", 7000, "")
	require.NoError(t, err)
	update(t, s, func(ctx context.Context, tx storage.Tx) error {
		_, errs, err := ledger.Apply(ctx, tx, whStart, []ledger.Operation{op})
		if err == nil {
			err = errs[0]
		}
		return err
	})
	read(t, s, func(ctx context.Context, tx storage.Tx) error {
		b, err := tx.LedgerBalance(ctx, ledger.Wallet("app_b"))
		require.NoError(t, err)
		assert.Equal(t, int64(7000), b)
		b, err = tx.LedgerBalance(ctx, ledger.Escrow("app_b"))
		require.NoError(t, err)
		assert.Zero(t, b, "an account never written to is at zero")
		return nil
	})
}
