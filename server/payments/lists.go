package payments

import (
	"context"
	"net/url"
	"time"

	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/ledger"
)

// What the dashboard reads of an app's money (docs/dashboard.md "API"):
// GET /v1/apps/{app_id}/balance and GET
// /v1/apps/{app_id}/payouts.

// ListTx is what the balance and the payouts list read.
type ListTx interface {
	// LedgerBalance is an account's balance (0 for an account never
	// written to).
	LedgerBalance(ctx context.Context, account string) (int64, error)
	// PayoutPage returns up to limit of the app's payouts, newest first
	// (created_at, id), after the position after when set.
	PayoutPage(ctx context.Context, appID string, after *cursor.Position, limit int) ([]Payout, error)
}

// Balance is an app's money at one instant, read in one snapshot.
type Balance struct {
	// WalletCents is the wallet's balance: what campaigns spend from and
	// payouts take out of (negative when a processor adjustment overdrew it).
	WalletCents int64
	// EscrowHeldCents is what the app's installs hold until they clear or
	// are refunded (its escrow account).
	EscrowHeldCents int64
	// WithdrawableCents is what a payout would take now (Withdrawable).
	WithdrawableCents int64
	// CreditsCents is the part of the wallet that is spendable on campaigns
	// but not withdrawable: top-ups, credits-mode earnings, adjustments
	// (WalletCents − WithdrawableCents).
	CreditsCents int64
	// PayoutPending is whether a payout is in flight (its amount has left
	// the wallet already).
	PayoutPending bool
	AsOf          time.Time
}

// Balance reads appID's balance.
func (s *Service) Balance(ctx context.Context, appID string) (Balance, error) {
	out := Balance{AsOf: s.now()}
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if out.WalletCents, err = tx.LedgerBalance(ctx, ledger.Wallet(appID)); err != nil {
			return err
		}
		if out.EscrowHeldCents, err = tx.LedgerBalance(ctx, ledger.Escrow(appID)); err != nil {
			return err
		}
		totals, err := tx.LedgerTotals(ctx, ledger.Wallet(appID))
		if err != nil {
			return err
		}
		out.WithdrawableCents = Withdrawable(totals, out.WalletCents)
		out.CreditsCents = out.WalletCents - out.WithdrawableCents
		out.PayoutPending, err = tx.PendingPayout(ctx, appID)
		return err
	})
	return out, err
}

// Bounds of GET /v1/apps/{app_id}/payouts.
const (
	DefaultPayoutLimit = 100
	MaxPayoutLimit     = 1000
)

// PayoutQuery selects a page of an app's payouts, newest first.
type PayoutQuery struct {
	AppID string
	After *cursor.Position
	Limit int
}

// ParsePayoutQuery reads the query of GET /v1/apps/{app_id}/payouts:
// `limit` and `cursor`.
func ParsePayoutQuery(appID string, v url.Values) (PayoutQuery, error) {
	q := PayoutQuery{AppID: appID}
	var err error
	q.Limit, q.After, err = cursor.Page(v, DefaultPayoutLimit, MaxPayoutLimit)
	return q, err
}

// PayoutPage is a page of payouts; Next is the cursor of the following
// (older) page, "" on the last one.
type PayoutPage struct {
	Payouts []Payout
	Next    string
}

// ListPayouts returns a page of q.AppID's payouts.
func (s *Service) ListPayouts(ctx context.Context, q PayoutQuery) (PayoutPage, error) {
	var out PayoutPage
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		list, err := tx.PayoutPage(ctx, q.AppID, q.After, q.Limit+1)
		out.Payouts, out.Next = cursor.Cut(list, q.Limit, func(p Payout) cursor.Position {
			return cursor.Position{CreatedAt: p.CreatedAt, ID: p.ID}
		})
		return err
	})
	return out, err
}
