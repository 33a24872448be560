package xpromo

import (
	"encoding/json"
	"time"
)

// Wire types of the lists a dashboard reads (additive): GET
// /v1/apps/{app_id}/balance, …/payouts, …/keys, GET /v1/chains and GET
// /v1/admin/apps. Lists are newest first (the admin apps list oldest first:
// it is the review queue) and page with an opaque cursor.

// Balance is the answer of GET /v1/apps/{app_id}/balance: the app's money
// at AsOf, read in one snapshot of the ledger. All amounts are euro cents
// (1 credit = 1 cent).
type Balance struct {
	AppID    string `json:"app_id"`
	Currency string `json:"currency"` // EUR
	// WalletCents is the wallet's balance: what campaigns spend from and
	// payouts take out of; negative when a refund or chargeback at the
	// payment processor overdrew it.
	WalletCents int64 `json:"wallet_cents"`
	// EscrowHeldCents is what the app's installs hold while they wait for
	// the 48-hour activation (the app's escrow account): charged when they
	// clear, back in the wallet when they are refunded.
	EscrowHeldCents int64 `json:"escrow_held_cents"`
	// WithdrawableCents is what RequestPayout would transfer now: cash
	// earnings − payouts − cash clawbacks, capped by the wallet, never
	// negative. A payout needs at least MinPayoutCents.
	WithdrawableCents int64 `json:"withdrawable_cents"`
	// CreditsCents is the part of the wallet that is spendable on
	// campaigns but not withdrawable (top-ups, credits-mode earnings,
	// adjustments): WalletCents − WithdrawableCents.
	CreditsCents   int64 `json:"credits_cents"`
	MinPayoutCents int64 `json:"min_payout_cents"`
	// PayoutPending is whether a payout is in flight (its amount has left
	// the wallet already; another payout waits for it).
	PayoutPending bool      `json:"payout_pending"`
	AsOf          time.Time `json:"as_of"`
}

// PayoutStatus is the state of a payout.
type PayoutStatus string

// Payout states.
const (
	PayoutPending PayoutStatus = "pending" // reserved; the transfer is in flight
	PayoutSent    PayoutStatus = "sent"    // transferred
	PayoutFailed  PayoutStatus = "failed"  // refused; the amount went back to the wallet
)

// Payout is one payout of an app (GET /v1/apps/{app_id}/payouts).
type Payout struct {
	PayoutID    string       `json:"payout_id"`
	AmountCents int64        `json:"amount_cents"`
	Currency    string       `json:"currency"`
	Status      PayoutStatus `json:"status"`
	// Destination is the payout account the transfer goes to (acct_…).
	Destination string `json:"destination"`
	// TransferID is the processor's transfer id; null until transferred.
	TransferID *string `json:"transfer_id"`
	// Failure is why the processor refused it; null unless failed.
	Failure   *string   `json:"failure"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// PayoutPage is the answer of GET /v1/apps/{app_id}/payouts, newest first.
type PayoutPage struct {
	Payouts []Payout `json:"payouts"`
	// NextCursor is set when older payouts exist; absent on the last page.
	NextCursor *string `json:"next_cursor,omitempty"`
}

// MarshalJSON emits Payouts as [] when nil.
func (p PayoutPage) MarshalJSON() ([]byte, error) {
	type plain PayoutPage
	if p.Payouts == nil {
		p.Payouts = []Payout{}
	}
	return json.Marshal(plain(p))
}

// PageParams are the paging parameters of a list: Limit (0 = the
// server's default) and Cursor (a previous page's NextCursor; "" = the
// first page). The iterators follow cursors themselves.
type PageParams struct {
	Limit  int
	Cursor string
}

// ChainRole is an app's side of a chain, the `role` filter of GET
// /v1/chains.
type ChainRole string

// Chain roles.
const (
	RolePublisher  ChainRole = "publisher"  // the app showed the ad and earns
	RoleAdvertiser ChainRole = "advertiser" // the app was installed and pays
)

// Bounds of GET /v1/chains.
const (
	DefaultChainLimit = 50
	MaxChainLimit     = 100
)

// ChainListParams are the optional filters of ListChains and Chains; the
// zero value reads every chain of the app on either side, newest first.
type ChainListParams struct {
	State      ChainState // "": every state
	Role       ChainRole  // "": either side
	CampaignID string     // "": every campaign; else one of the app's own (its advertiser side: another app's matches nothing)
	PageParams
}

// ChainPage is the answer of GET /v1/chains: the caller's app's chains,
// newest first (by when the chain was recorded).
type ChainPage struct {
	Chains     []Chain `json:"chains"`
	NextCursor *string `json:"next_cursor,omitempty"`
}

// MarshalJSON emits Chains as [] when nil.
func (p ChainPage) MarshalJSON() ([]byte, error) {
	type plain ChainPage
	if p.Chains == nil {
		p.Chains = []Chain{}
	}
	return json.Marshal(plain(p))
}

// APIKeyInfo describes one of an app's API keys: never the key or its
// hash, only what tells keys apart.
type APIKeyInfo struct {
	// Prefix is the key's first 12 characters (xp_live_…, xp_test_…).
	Prefix    string    `json:"prefix"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is null for the current key; a rotation sets it on the
	// keys before (24 hours on).
	ExpiresAt *time.Time `json:"expires_at"`
	// Active is whether the key authenticates now.
	Active bool `json:"active"`
}

// APIKeyList is the answer of GET /v1/apps/{app_id}/keys: the app's newest
// 20 keys, newest first.
type APIKeyList struct {
	Keys []APIKeyInfo `json:"keys"`
}

// MarshalJSON emits Keys as [] when nil.
func (l APIKeyList) MarshalJSON() ([]byte, error) {
	type plain APIKeyList
	if l.Keys == nil {
		l.Keys = []APIKeyInfo{}
	}
	return json.Marshal(plain(l))
}

// AdminAppListParams are the optional filters of AdminListApps and
// AdminApps; Status AppStatusPending is the review queue.
type AdminAppListParams struct {
	Status AppStatus // "": every status
	PageParams
}

// AdminAppPage is the answer of GET /v1/admin/apps: apps oldest first (the
// app that has waited longest on top).
type AdminAppPage struct {
	Apps       []App   `json:"apps"`
	NextCursor *string `json:"next_cursor,omitempty"`
}

// MarshalJSON emits Apps as [] when nil.
func (p AdminAppPage) MarshalJSON() ([]byte, error) {
	type plain AdminAppPage
	if p.Apps == nil {
		p.Apps = []App{}
	}
	return json.Marshal(plain(p))
}

// AdminComplaintListParams are the optional filters of
// AdminListComplaints and AdminAllComplaints.
type AdminComplaintListParams struct {
	Status ComplaintStatus // "": every status
	PageParams
}
