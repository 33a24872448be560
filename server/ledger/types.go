// Package ledger is xpromo's append-only, double-entry money ledger.
//
// Every money movement is an Operation: a set of Postings over accounts that
// sums to zero. Posting an operation appends one Line per posting; each line
// carries the account's gapless sequence number, the balance after it, and a
// SHA-256 hash chained to the account's previous line. Lines are never updated
// or deleted (the stores enforce that in the database); corrections are new
// operations.
//
// An app's wallet ledger (the API's LedgerLine list) is the lines on its
// wallet account. Escrow, platform revenue, the payment processor and the
// credit bonus are accounts too, so every operation balances.
//
// The algorithm lives here, in plain Go; stores only provide the transactional
// primitives of Tx. See docs/ledger.md for the model and its invariants.
package ledger

import (
	"time"
)

// LineType is the type of a line. The first eight are the API's LedgerLine
// types and appear on wallets; the last two only on platform accounts.
type LineType string

const (
	TypeTopup         LineType = "topup"
	TypeEarn          LineType = "earn"
	TypeCharge        LineType = "charge"
	TypeEscrowHold    LineType = "escrow_hold"
	TypeEscrowRelease LineType = "escrow_release"
	TypeClawback      LineType = "clawback"
	TypePayout        LineType = "payout"
	TypeAdjustment    LineType = "adjustment"
	TypeTake          LineType = "take"         // platform revenue from a cleared install
	TypeCreditBonus   LineType = "credit_bonus" // the 1.2× credits bonus, an expense of the platform
)

var validTypes = map[LineType]bool{
	TypeTopup: true, TypeEarn: true, TypeCharge: true, TypeEscrowHold: true,
	TypeEscrowRelease: true, TypeClawback: true, TypePayout: true, TypeAdjustment: true,
	TypeTake: true, TypeCreditBonus: true,
}

// Valid reports whether t is a known line type.
func (t LineType) Valid() bool { return validTypes[t] }

// Kind names what an operation does.
type Kind string

const (
	KindTopup         Kind = "topup"
	KindEscrowHold    Kind = "escrow_hold"
	KindEscrowRelease Kind = "escrow_release"
	KindClear         Kind = "clear"
	KindClawback      Kind = "clawback"
	KindPayout        Kind = "payout" // a payout's reservation
	KindPayoutSettle  Kind = "payout_settle"
	KindPayoutReturn  Kind = "payout_return"
	KindAdjustment    Kind = "adjustment"
	// KindProcessorAdjustment: the processor took a top-up's money back (a
	// refund, a dispute) or returned it (a dispute won).
	KindProcessorAdjustment Kind = "processor_adjustment"
)

// EarnMode says how a publisher takes its earnings.
type EarnMode string

const (
	EarnCash    EarnMode = "cash"    // withdrawable
	EarnCredits EarnMode = "credits" // ×1.2, spendable on campaigns, never withdrawable
)

// Posting is one leg of an operation: an amount added to one account.
type Posting struct {
	Account      string
	Type         LineType
	Amount       int64  // signed cents; positive credits the account
	Counterparty string // the other app involved, if any (LedgerLine.counterparty_app_id)
	ChainID      string // the attribution chain, if any (LedgerLine.event_chain_id)
	Note         string
	EarnMode     EarnMode // on earn and clawback lines: which balance they affect
	// MayOverdraw lets this posting take a wallet below zero (a clawback of
	// earnings already paid out, a refund or dispute of a top-up already
	// spent). Escrow accounts can never go below zero.
	MayOverdraw bool
}

// Operation is a balanced set of postings, applied atomically and at most once.
type Operation struct {
	// Key identifies the operation: a repeated key returns the first result and
	// never posts twice. Derive it from the business event (chain id, checkout
	// session, payout id), never from time.
	Key      string
	Kind     Kind
	Postings []Posting
	Opens    *Hold   // the escrow hold this operation opens
	Resolves *Settle // the escrow hold this operation resolves
}

// Hold is an escrow hold: funds moved from an advertiser's wallet to its
// escrow account, pending a charge or a release.
type Hold struct {
	ID         string
	Advertiser string // app id
	Publisher  string // app id
	Amount     int64
	ChainID    string
	CreatedAt  time.Time
	Resolution string // "", "charge" or "release"
}

// Settle says which hold an operation resolves, and how.
type Settle struct {
	HoldID     string
	Resolution string // "charge" or "release"
	Advertiser string
	Amount     int64
}

// Record is a stored operation.
type Record struct {
	ID          string
	Key         string
	Kind        Kind
	RequestHash []byte
	CreatedAt   time.Time
}

// Line is one appended ledger row: a posting applied to its account.
type Line struct {
	ID           string
	OperationID  string
	Index        int // position of the posting in its operation
	Account      string
	Seq          int64
	Type         LineType
	Amount       int64
	BalanceAfter int64
	Counterparty string
	ChainID      string
	Note         string
	EarnMode     EarnMode
	CreatedAt    time.Time
	PrevHash     []byte
	Hash         []byte
}

// Account is the mutable head of an account's chain: its balance, its last
// sequence number and hash. It is a cache of the lines, verifiable from them.
type Account struct {
	ID      string
	Balance int64
	Seq     int64
	Head    []byte // hash of the last line; GenesisHash before the first
	// LastAt is the time of the last line (zero before the first). The
	// ledger never dates a line before it, so an account's lines are in time
	// order as well as in sequence order, and a ledger page from a date is
	// an index seek (the first line at or after it) rather than a walk from
	// the account's first line.
	LastAt time.Time
}

// Result is what posting an operation returns, the first time and on replay.
type Result struct {
	Operation Record
	Lines     []Line
	Replayed  bool // true when the key had been posted before
}

// Line returns the result's line on account, if there is one.
func (r Result) Line(account string) (Line, bool) {
	for _, l := range r.Lines {
		if l.Account == account {
			return l, true
		}
	}
	return Line{}, false
}
