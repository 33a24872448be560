// Package attribution is the server side of xpromo's deterministic install
// attribution: the SDK keys apps register, the fill that seals an offer, the
// click that records it, the install claim that verifies both SDK
// signatures and the fraud rules and holds escrow, the heartbeats that
// activate an install after 48 hours, and the sweep that clears activated
// chains and refunds the others.
//
// A chain is one click's life: clicked → installed → activated_48h →
// cleared, or refunded (no heartbeat in its window), or rejected (with a
// stable reason code). Every state change commits in one transaction with
// its ledger lines (ledger.Apply) and its outbox events. The token format
// and its cryptography are sdk/attribution's; this package adds what needs
// the server's state: registered keys, single use, the fraud rules, money.
//
// docs/attribution.md describes the states, the rules and their thresholds,
// the sweep and the outbox; integration-guide.md the wire protocol.
package attribution

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
)

// State is the state of a chain.
type State string

// Chain states.
const (
	StateClicked   State = "clicked"       // the publisher's SDK reported a signed click
	StateInstalled State = "installed"     // the advertiser's SDK countersigned; escrow is held
	StateActivated State = "activated_48h" // a heartbeat came in [48 h, 72 h) after the install
	StateCleared   State = "cleared"       // settled: the advertiser paid, the publisher earned
	StateRefunded  State = "refunded"      // no heartbeat in the window; the hold went back
	StateRejected  State = "rejected"      // refused, with a stable reason code
)

// Valid reports whether s is a chain state.
func (s State) Valid() bool {
	switch s {
	case StateClicked, StateInstalled, StateActivated, StateCleared, StateRefunded, StateRejected:
		return true
	}
	return false
}

// The activation window: the first heartbeat at or after ActivationAfter
// and before ActivationWindowEnd (both from the install) activates a chain;
// a chain still installed at ActivationWindowEnd is refunded by the sweep.
const (
	ActivationAfter     = 48 * time.Hour
	ActivationWindowEnd = 72 * time.Hour
)

// Chain is the record of one click and what followed it. The click token and
// the countersignature are kept exactly as presented: anyone holding the two
// apps' public SDK keys can verify them again.
//
// A claim refused before it was authenticated (a bad signature, a replay, an
// expired token, the wrong app) does not touch the chain it names: it is
// recorded as a chain of its own, rejected from the start, with Nonce empty
// and ClaimedNonce set, so a third party who saw a click token cannot burn
// it. Such a record names only the apps and campaign that the server's MAC
// vouched for.
type Chain struct {
	ID    string
	Nonce string // the offer's jti; "" on the record of a refused claim
	// ClaimedNonce is the jti a refused claim named, on its record.
	ClaimedNonce string
	State        State
	Reason       string // the reason code of a rejected chain

	CampaignID      string
	PublisherAppID  string
	AdvertiserAppID string
	Category        string
	Platform        xpromo.Platform
	PriceCents      int64

	OfferedAt time.Time // oat, server clock
	ClickedAt time.Time // iat, device clock
	ExpiresAt time.Time // exp = iat + 15 minutes

	ClickToken   string // the compact JWS signed by the publisher's SDK
	TokenHash    string // its hash, the "th" of countersignature and heartbeats
	PublisherKID string

	Countersignature string // the compact JWS signed by the advertiser's SDK
	AdvertiserKID    string
	DeviceID         string
	ClaimedAt        time.Time // cat, device clock; zero before the claim

	ClickIP    string // as seen by the server; "" when the click was not reported
	InstallIP  string
	InstallASN int64 // 0 when unknown

	InstalledAt time.Time // server clock; zero before the install
	ActivatedAt time.Time
	ResolvedAt  time.Time // when it was cleared, refunded or rejected

	HeartbeatSeq    int64 // the highest heartbeat seq accepted
	LastHeartbeatAt time.Time

	CreatedAt time.Time
	UpdatedAt time.Time
}

// HoldID is the id of the escrow hold of the chain's install (one per chain).
func (c Chain) HoldID() string { return c.ID }

// hold is the chain's escrow hold as the ledger sees it.
func (c Chain) hold() ledger.Hold {
	return ledger.Hold{ID: c.HoldID(), Advertiser: c.AdvertiserAppID, Publisher: c.PublisherAppID, Amount: c.PriceCents, ChainID: c.ID}
}

// Ledger operation keys of a chain, derived from its id so that a retry
// never moves money twice.
func holdKey(chainID string) string    { return "hold:" + chainID }
func clearKey(chainID string) string   { return "clear:" + chainID }
func releaseKey(chainID string) string { return "release:" + chainID }

// ClearKey is the ledger key of a chain's clearing (a clawback reads the
// earn mode the clearing paid in from its lines).
func ClearKey(chainID string) string { return clearKey(chainID) }

// SDKKey is an SDK public key registered to an app. ID is its key id
// (sdk/attribution.KeyID): the kid of everything it signs. A revoked key
// verifies nothing from its revocation on.
type SDKKey struct {
	ID        string
	AppID     string
	PublicKey ed25519.PublicKey
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key is valid
}

// Revoked reports whether the key is revoked at t.
func (k SDKKey) Revoked(t time.Time) bool { return !k.RevokedAt.IsZero() && !t.Before(k.RevokedAt) }

// FillCount is a number of fills (creatives served) of one campaign in one
// publisher app on one UTC day.
type FillCount struct {
	Day             time.Time // midnight UTC
	CampaignID      string
	AdvertiserAppID string
	PublisherAppID  string
	Count           int64
}

// Due is a chain the sweep has claimed, with what settling it needs: the
// publisher's earn mode and, when the publisher is suspended, the reason
// of its suspension (a publisher suspended for fraud is not paid), and the
// advertiser's status (the go-live rule only concerns approved and
// throttled apps).
type Due struct {
	Chain
	PublisherEarnMode ledger.EarnMode
	// PublisherSuspension is the reason of the history row that suspended
	// the publisher, "" unless the publisher is suspended now.
	PublisherSuspension string
	AdvertiserStatus    xpromo.AppStatus
}

// ChainStats are the chain aggregates of one advertiser app over a period
// (market stats), each event counted at its own time in [From, To]: what
// the escrow holds cannot tell.
type ChainStats struct {
	Impressions   int64            // fills of the app's campaigns
	Clicks        int64            // chains clicked
	FraudRejected map[string]int64 // rejected chains by fraud reason code
}

// NetworkStats are the network's chain aggregates over a period.
type NetworkStats struct {
	Chains        int64 // chains and refused-claim records created
	FraudRejected int64 // of those, rejected with a fraud_ code
	// CPISum and CPICount are, per category, the sum and number of the
	// prices of the chains cleared.
	CPISum   map[string]int64
	CPICount map[string]int64
}

// Tx is what attribution needs from a transaction: the ledger's primitives
// (an install's hold and its clearing commit with the chain), an app and a
// campaign, and its own tables.
type Tx interface {
	ledger.Tx
	ListTx
	GetApp(ctx context.Context, id string, lock bool) (apps.App, bool, error)

	// InsertSDKKey stores a new key; a kid stored before makes it fail
	// with an error wrapping ledger.ErrConflict.
	InsertSDKKey(ctx context.Context, k SDKKey) error
	// SDKKey returns the key with this id, and false when there is none.
	SDKKey(ctx context.Context, kid string) (SDKKey, bool, error)
	// AppSDKKeys returns an app's keys, oldest first.
	AppSDKKeys(ctx context.Context, appID string) ([]SDKKey, error)
	// RevokeSDKKey sets revoked_at on a key that has none.
	RevokeSDKKey(ctx context.Context, kid string, at time.Time) error

	// InsertChain stores a chain. When c.Nonce is set and a chain with that
	// nonce exists, it writes nothing and returns false: single use is this
	// atomic insert.
	InsertChain(ctx context.Context, c Chain) (inserted bool, err error)
	// ChainByNonce returns the chain of an offer nonce; with lock, the row
	// stays locked (FOR UPDATE) until the transaction ends.
	ChainByNonce(ctx context.Context, nonce string, lock bool) (Chain, bool, error)
	// RefusalRecord returns the rejected chain recording a refused message
	// about the offer nonce for reason, if one was recorded.
	RefusalRecord(ctx context.Context, nonce, reason string) (Chain, bool, error)
	// ChainByTokenHash returns the chain whose click token has this hash
	// (refused-claim records excluded), locked with lock.
	ChainByTokenHash(ctx context.Context, th string, lock bool) (Chain, bool, error)
	// ChainByID returns a chain.
	ChainByID(ctx context.Context, id string) (Chain, bool, error)
	// InsertClaimedChain inserts the chain of a claim whose click was never
	// reported, in its final state. A chain of its nonce inserted meanwhile
	// fails it, or the transaction at commit, with ledger.ErrConflict, which
	// the store cures by running the transaction again. (PostgreSQL sends
	// it with the next statement or with COMMIT, like UpdateChains.)
	InsertClaimedChain(ctx context.Context, c Chain) error
	// UpdateChains writes the mutable columns of chains (state, reason,
	// claim, install, activation, resolution, heartbeat, updated_at).
	UpdateChains(ctx context.Context, cs []Chain) error

	// CampaignForUpdate returns a campaign's app and daily budget, its row
	// locked until the transaction ends, so that concurrent install claims
	// of one campaign check its budget in turn.
	CampaignForUpdate(ctx context.Context, id string) (c CampaignBudget, found bool, err error)
	// CampaignSpend is the sum of the prices of the campaign's chains
	// installed on the UTC day starting at day and not refunded or
	// rejected. It reads one row (the day's spend, which the store keeps
	// with every change of a chain: migration 00025), not the day's chains.
	CampaignSpend(ctx context.Context, campaignID string, day time.Time) (int64, error)
	// DaySpend is CampaignSpend for every campaign with a spend on the UTC
	// day starting at day (campaigns at 0 are left out): the day's rows of
	// the same kept figure, which delivery reloads at start and at each
	// midnight.
	DaySpend(ctx context.Context, day time.Time) (map[string]int64, error)
	// SpendByCampaign sums the same over the chains themselves, for every
	// campaign with any spend installed in [from, to), reading every chain
	// of the window: tests hold CampaignSpend and DaySpend to it.
	SpendByCampaign(ctx context.Context, from, to time.Time) (map[string]int64, error)
	// InstallHistory reads, in one query, what the device and velocity
	// rules need: whether the device has an accepted install (installed_at
	// set) of the advertiser's app, and the accepted installs by device
	// since deviceSince and by install address since ipSince.
	InstallHistory(ctx context.Context, advertiserAppID, deviceID string, deviceSince time.Time, ip string, ipSince time.Time) (InstallHistory, error)

	// DueChains claims up to limit chains due for settlement at now:
	// activated_48h ones, and installed ones whose window closed
	// (installed_at <= closedBefore). On PostgreSQL with FOR UPDATE SKIP
	// LOCKED, so concurrent sweepers take disjoint batches.
	DueChains(ctx context.Context, closedBefore time.Time, limit int) ([]Due, error)
	// SettleChains writes what settling changes on chains: state, reason,
	// resolved_at and updated_at. (UpdateChains writes every mutable
	// column, so SQLite rewrites the entries of every index covering one.)
	SettleChains(ctx context.Context, cs []Chain) error

	// Writer appends events to the outbox.
	outbox.Writer
	// AppOutbox returns an app's events, oldest first (what a webhook
	// deliverer sends it; delivered ones included).
	AppOutbox(ctx context.Context, appID string) ([]outbox.Event, error)
	// AddFillCounts adds counts to the stored per-day fill counters.
	AddFillCounts(ctx context.Context, counts []FillCount) error
	// RecordFillFlush records the flush id at `at` and deletes the records
	// older than two days before it; it reports false, recording nothing,
	// when id is recorded already (its counts were stored).
	RecordFillFlush(ctx context.Context, id string, at time.Time) (bool, error)
	// AddCanaryCounts adds counts to the stored per-day counters of
	// canaries served (the canary check, canary.go).
	AddCanaryCounts(ctx context.Context, counts []CanaryCount) error
	// InsertCanaryClick records a click on a canary; it writes nothing and
	// returns false when the jti has a record already.
	InsertCanaryClick(ctx context.Context, c CanaryClick) (inserted bool, err error)

	// AppChainStats aggregates an advertiser's chains and fills in [from, to].
	AppChainStats(ctx context.Context, appID string, from, to time.Time) (ChainStats, error)
	// NetworkChainStats aggregates every chain in [from, to].
	NetworkChainStats(ctx context.Context, from, to time.Time) (NetworkStats, error)
	// ChainStatsDays and NetworkChainStatsDays are the same figures over
	// the UTC days from through to (midnights, both included), read from
	// the daily rollups (stats.go).
	ChainStatsDays(ctx context.Context, appID string, from, to time.Time) (ChainStats, error)
	NetworkChainStatsDays(ctx context.Context, from, to time.Time) (NetworkStats, error)
	// DailyStats returns an app's daily rollups of the UTC days from
	// through to, one row per day and side that has one, by day then side;
	// campaignID "" sums every campaign.
	DailyStats(ctx context.Context, appID, campaignID string, from, to time.Time) ([]DailyRow, error)
}

// CampaignBudget is what an install claim reads of its campaign.
type CampaignBudget struct {
	AppID            string
	DailyBudgetCents int64
}

// InstallHistory is what the device and velocity rules know of a device
// and an address.
type InstallHistory struct {
	DeviceHasApp   bool  // the device has an accepted install of the advertiser's app
	ByDevice, ByIP int64 // accepted installs in the rules' windows
}

// Txer runs fn in a transaction (storage.Updater / storage.Viewer).
type Txer func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

// Auction is the marketplace as attribution uses it (market.Service, through
// an adapter in package assembly).
type Auction interface {
	// Fill runs the auction for a publisher's slot; false: no campaign.
	Fill(ctx context.Context, publisherAppID, category string, platform xpromo.Platform) (Award, bool, error)
	// CheckBudget fails with budget_exhausted when price does not fit.
	CheckBudget(dailyBudgetCents, spentTodayCents, priceCents int64) error
	// Spent tells delivery, after the commit, that a hold opened at `at`
	// (+price) or that a refund released one opened at `at` (-price).
	Spent(campaignID, advertiserAppID string, deltaCents int64, at time.Time)
	// RecordTrade applies the first-trade rule inside the transaction of an
	// accepted install (apps still approved move to throttled); it locks
	// both apps' rows, in the order given.
	RecordTrade(ctx context.Context, tx Tx, appA, appB string) (changed bool, err error)
	// RecordClearing applies the go-live rule inside the transaction that
	// cleared an advertiser's install.
	RecordClearing(ctx context.Context, tx Tx, advertiserAppID string) (changed bool, err error)
	// Invalidate makes delivery rebuild (after a status change committed).
	Invalidate()
}

// Award is the auction's answer: which campaign fills the slot, at what price.
type Award struct {
	CampaignID      string
	AdvertiserAppID string
	Category        string
	Platform        xpromo.Platform
	PriceCents      int64
	FloorCents      int64
	Reserved        bool
}

// IPClassifier tells datacenter addresses (hosting, cloud) from others.
type IPClassifier interface {
	// Classify returns the address's AS number (0 when unknown) and whether
	// it belongs to a datacenter.
	Classify(ip netip.Addr) (asn uint32, datacenter bool)
}

// Service is attribution's entry point; its fields are its dependencies.
type Service struct {
	Update Txer
	View   Txer
	Now    func() time.Time // the injected clock
	// Auction runs fills and keeps delivery's spend.
	Auction Auction
	// MACKey seals offers; MACKeys verifies them (the current key and the
	// previous ones still in flight).
	MACKey  token.MACKey
	MACKeys token.MACKeys
	// IPs classifies client addresses for fraud_datacenter_asn; nil
	// disables that rule (logged at start by the wiring).
	IPs   IPClassifier
	Rules Rules
	Log   *slog.Logger
	// SweepBatch is how many chains one sweep transaction settles; 0 means
	// DefaultSweepBatch.
	SweepBatch int
	// CacheTTL is how long fill reuses an app's record; 0 means
	// DefaultCacheTTL.
	CacheTTL time.Duration
	// CanaryRate makes one fill in CanaryRate, on average, a canary (the
	// canary check, canary.go; docs/apps.md "Canary check"); 0 disables it.
	CanaryRate int

	fills    counter[fillKey]
	canaries counter[canaryDay]
	flushMu  sync.Mutex // one FlushFills at a time
	unsure   *fillFlush // a flush whose outcome is not known, run again first
	cache    appCache
	clicks   clickIDs
}

// now is the clock at the precision both stores keep.
func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}
