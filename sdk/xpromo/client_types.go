package xpromo

import (
	"time"
)

// Parameters of the client's calls, and the few answers of additive
// endpoints whose wire types are not shared with the server.

// LedgerParams are the optional query parameters of GetLedger and
// LedgerLines. The zero value (or nil) reads from the start, 100 lines a
// page.
type LedgerParams struct {
	// From is the first UTC date included, "YYYY-MM-DD" ("" = unbounded).
	// DateOf formats a time.
	From string
	// To is the last UTC date included, "YYYY-MM-DD" ("" = unbounded).
	To string
	// Limit is the page size, 1 to MaxLedgerLimit (0 = DefaultLedgerLimit).
	Limit int
	// Cursor is the NextCursor of the previous page (of the same From and
	// To); "" reads the first page. LedgerLines follows cursors itself.
	Cursor string
}

// DateOf formats t's UTC date as the API's date ("YYYY-MM-DD"), for
// LedgerParams.From and To.
func DateOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// StatsParams are the optional query parameters of GetStats.
type StatsParams struct {
	// Period is the reporting window ("" = the server's DefaultPeriod).
	Period Period
}

// TopUpParams are the parameters of TopUp.
type TopUpParams struct {
	// AmountCents is the credits to buy; at least MinTopUpCents.
	AmountCents int64
	// PreferX402 asks to pay machine to machine over x402 (sends
	// `Prefer: payment=x402`): the answer is the 402 challenge.
	PreferX402 bool
	// Payment is an x402 v1 X-PAYMENT header value (base64 of a
	// PaymentPayload, e.g. x402.Wallet.PaymentHeader) answering an earlier
	// challenge. A client made WithX402Wallet signs one itself when this is
	// empty. Retry with the same
	// Idempotency-Key as the call that got the challenge (WithIdempotencyKey):
	// the server does not store 402 answers, so the key may be reused.
	Payment string
}

// TopUpResult is the answer of TopUp. Exactly one of CheckoutURL,
// Challenge and Line is set:
//
//   - CheckoutURL (200): a person pays there; the wallet is credited (a
//     `topup` ledger line) when the payment completes. In test mode it is
//     the server's own test checkout page (see CompleteTestCheckout).
//   - Challenge (402): the x402 challenge for a machine payer. This is an
//     answer, not an error.
//   - Line (200): a settled x402 payment's `topup` ledger line; the
//     settlement receipt is in PaymentResponse.
type TopUpResult struct {
	CheckoutURL string
	Challenge   *X402Challenge
	Line        *LedgerLine
	// PaymentResponse is the X-PAYMENT-RESPONSE header (base64 of the
	// settlement response), when the server sent one.
	PaymentResponse string
}

// PaymentRequired reports whether the answer is the 402 x402 challenge.
func (r *TopUpResult) PaymentRequired() bool { return r != nil && r.Challenge != nil }

// CheckoutSession is the answer of POST /test/checkout/{session_id}
// (CompleteTestCheckout): a test-mode checkout session.
type CheckoutSession struct {
	SessionID string `json:"session_id"`
	// Status is "open", "completed" or "expired".
	Status      string `json:"status"`
	AmountCents int64  `json:"amount_cents"`
	AppID       string `json:"app_id"`
}

// X402Descriptor is the answer of GET /.well-known/x402.
type X402Descriptor struct {
	X402Version int `json:"x402Version"`
	// Resources are payable resources as absolute URIs: the caller's own
	// top-up URL when the descriptor is read with an API key, none without.
	Resources []string `json:"resources"`
	// ResourceTemplates are the payable resources of every app as RFC 6570
	// URI templates ({app_id} is the payer's own app).
	ResourceTemplates []string `json:"resourceTemplates"`
}

// PayoutAccount is the body and answer of PUT
// /admin/apps/{app_id}/payout-account.
type PayoutAccount struct {
	AppID string `json:"app_id,omitempty"`
	// AccountID is the connected account, "acct_…".
	AccountID string `json:"account_id"`
}

// FloorCut is the body of POST /admin/categories/{category}/floors: lower
// a category's floor on one platform. Floors never rise.
type FloorCut struct {
	Platform Platform `json:"platform"`
	// FloorCents is the new floor, at most the current one.
	FloorCents int64 `json:"floor_cents"`
	// Reason is kept in the floor history; required.
	Reason string `json:"reason"`
}

// CategoryFloors is the answer of a floor cut: the category with its
// current floor per platform, in cents.
type CategoryFloors struct {
	Key    string         `json:"key"`
	Label  string         `json:"label"`
	Floors PlatformFloors `json:"floors"`
}

// PlatformFloors are a category's current floors, in cents.
type PlatformFloors struct {
	Mac int64 `json:"mac"`
	Win int64 `json:"win"`
}

// Adjustment is the body of POST /admin/apps/{app_id}/adjustments.
type Adjustment struct {
	// AmountCents is signed: positive credits the wallet. Non-zero, at most
	// 10,000,000 either way.
	AmountCents int64 `json:"amount_cents"`
	// Note says why (1 to 500 bytes); it is shown on the ledger line.
	Note string `json:"note"`
}
