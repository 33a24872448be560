// The wire types of the xpromo REST API v1 (base path /v1).
//
// The server and the clients (SDK client, MCP server, CLI, conformance suite)
// share these definitions, so they cannot drift. JSON field names follow the
// API document exactly; fields the document marks "or null" are pointers and
// are always emitted (as null when nil); optional request fields are omitted
// when unset. Arrays and maps that the document lists as always present are
// emitted as [] / {} rather than null, even when the Go value is nil.
//
// Amounts are in euro cents: one credit is one euro cent, currency EUR.

package xpromo

import (
	"encoding/json"
	"time"
)

// Published constants of the rate card and limits of the API.
const (
	// Currency of every amount: EUR, one credit is one euro cent.
	Currency = "EUR"
	// TakeRate is the share of each cleared install the service keeps.
	TakeRate = 0.3
	// CreditBonus multiplies earnings taken as credits instead of cash.
	CreditBonus = 1.2
	// ReservedFloorShare is the share of each category's inventory sold only
	// at floor and never auctioned.
	ReservedFloorShare = 0.3
	// PricingModel: a published floor plus an optional second-price auction.
	PricingModel = "floor_plus_second_price"

	// MinTopUpCents is the minimum amount_cents of a top-up.
	MinTopUpCents = 5000
	// MinDailyBudgetCents is the minimum daily_budget_cents of a campaign.
	MinDailyBudgetCents = 1000
	// MinPayoutCents is the smallest withdrawable balance a payout accepts (EUR 50).
	MinPayoutCents = 5000

	// DefaultLedgerLimit is the page size of GET /apps/{app_id}/ledger when
	// `limit` is omitted; MaxLedgerLimit is the largest accepted `limit`.
	DefaultLedgerLimit = 100
	MaxLedgerLimit     = 1000

	// X402Version is the x402 protocol version of challenges (always 1).
	X402Version = 1
)

// RegisterAppRequest is the body of POST /apps. Every field is required
// except the additive Category and AppcastURL.
type RegisterAppRequest struct {
	Name     string   `json:"name"`
	Platform Platform `json:"platform"` // mac or win
	BundleID string   `json:"bundle_id"`
	// Domain must be at least six months old, checked over RDAP.
	Domain string `json:"domain"`
	// DownloadURL (uri) must serve the declared bundle_id.
	DownloadURL string `json:"download_url"`
	// ContactEmail (email) must answer a challenge message.
	ContactEmail string `json:"contact_email"`
	// Category (additive, optional) is the rate-card category key the app's
	// own slots sell inventory in, e.g. "productivity".
	Category string `json:"category,omitempty"`
	// AppcastURL (additive, optional, uri) is the app's Sparkle-format
	// appcast (as Sparkle, WinSparkle and NetSparkle publish): the release
	// cadence source of a Windows app, and of a Mac app whose bundle
	// declares no SUFeedURL. Client.UpdateApp changes it later.
	AppcastURL string `json:"appcast_url,omitempty"`
}

// RegisterAppResponse is the 201 answer of POST /apps.
type RegisterAppResponse struct {
	AppID string `json:"app_id"`
	// APIKey is the bearer credential, issued here and shown only once.
	APIKey string `json:"api_key"`
	// Status is always `pending`.
	Status       AppStatus `json:"status"`
	ScoringJobID string    `json:"scoring_job_id"`
}

// Score is the answer of GET /apps/{app_id}/score.
type Score struct {
	Status     AppStatus  `json:"status"`
	Gate       Gate       `json:"gate"`
	Reputation Reputation `json:"reputation"`
	// Behavior replaces Reputation after 500 installs traded; null before.
	Behavior *Behavior `json:"behavior"`
	// Reasons are reason codes (never null; [] when there are none).
	Reasons      []string  `json:"reasons"`
	NextReviewAt time.Time `json:"next_review_at"`
	// RetryAfter (additive) is when a gate check that failed for a
	// time-bound reason can pass: for gate_domain_too_young, the date the
	// domain becomes eligible. Null otherwise.
	RetryAfter *time.Time `json:"retry_after"`
}

// MarshalJSON emits Reasons as [] when nil.
func (s Score) MarshalJSON() ([]byte, error) {
	type plain Score
	if s.Reasons == nil {
		s.Reasons = []string{}
	}
	return json.Marshal(plain(s))
}

// Gate holds the outcomes of the vetting gate.
type Gate struct {
	// Signed: macOS notarisation ticket or Windows Authenticode chain.
	Signed          bool `json:"signed"`
	MalwareClean    bool `json:"malware_clean"`
	DomainAgeOK     bool `json:"domain_age_ok"`
	ContactVerified bool `json:"contact_verified"`
	BundleMatch     bool `json:"bundle_match"`
}

// Reputation is the pre-trading score, each integer on a 0-100 scale.
// Weights of Total: AI visibility and sentiment 50%, release cadence 20%,
// reviews 20%, coherence 10%.
type Reputation struct {
	Total        int `json:"total"`
	AIVisibility int `json:"ai_visibility"`
	Cadence      int `json:"cadence"`
	Reviews      int `json:"reviews"`
	Coherence    int `json:"coherence"`
}

// Behavior is the trading score that replaces Reputation after 500 installs traded.
type Behavior struct {
	Retention48h  float64 `json:"retention_48h"`
	UninstallRate float64 `json:"uninstall_rate"`
	// Canary is the canary check (docs/apps.md, "Canary check"): true when
	// enough canaries (planted offers an honest SDK never shows) were
	// served to the app since its last reinstatement and it clicked none;
	// false, with canary_failed or canary_not_measured in the score's
	// reasons, otherwise.
	Canary     bool    `json:"canary"`
	Complaints float64 `json:"complaints"`
}

// CreateCampaignRequest is the body of POST /campaigns.
type CreateCampaignRequest struct {
	AppID string `json:"app_id"`
	// Categories are category keys as published in the rate card.
	Categories []string `json:"categories"`
	// DailyBudgetCents is at least 1000.
	DailyBudgetCents int64 `json:"daily_budget_cents"`
	// MaxBidCents is the most paid per cleared install in these categories;
	// it must be at or above the category floor. Nil: the campaign buys at
	// the floor. Clearing is second price: the campaign pays one cent above
	// the next-highest competing bid, never its maximum.
	MaxBidCents *int64 `json:"max_bid_cents,omitempty"`
}

// MarshalJSON emits Categories as [] when nil.
func (r CreateCampaignRequest) MarshalJSON() ([]byte, error) {
	type plain CreateCampaignRequest
	if r.Categories == nil {
		r.Categories = []string{}
	}
	return json.Marshal(plain(r))
}

// Campaign is the answer of POST /campaigns (201, status `throttled`), of
// POST /campaigns/{campaign_id}/pause and /resume (200), and of the additive
// GET /campaigns/{campaign_id}, PATCH /campaigns/{campaign_id} and the items
// of GET /campaigns.
type Campaign struct {
	CampaignID       string         `json:"campaign_id"`
	DailyBudgetCents int64          `json:"daily_budget_cents"`
	Status           CampaignStatus `json:"status"`
	// StatusReason (additive) says why a campaign that is not paused is not
	// active: app_pending (nothing is delivered until the vetting gate
	// approves the app), app_rejected, app_suspended (nothing is
	// delivered), app_not_live (delivery within the app's daily throttled
	// cap), wallet_below_floor (nothing until a top-up covers the floor),
	// activating (a new campaign of a live, funded app: active within
	// seconds). Null when active or paused.
	StatusReason *string `json:"status_reason"`
	// FloorCents is the published floor for the category; always available;
	// never rises.
	FloorCents int64 `json:"floor_cents"`
	// MaxBidCents is null for a floor-price campaign.
	MaxBidCents *int64 `json:"max_bid_cents"`

	// Additive fields (docs/marketplace.md, "Reading and changing a
	// campaign").

	// AppID is the advertiser app the campaign buys installs for.
	AppID string `json:"app_id"`
	// Categories are the rate-card category keys it buys, as last set.
	Categories []string `json:"categories"`
	// SpentTodayCents is what the campaign has committed in the current UTC
	// day: the prices of its installs claimed today and not refunded. The
	// daily budget limits it.
	SpentTodayCents int64 `json:"spent_today_cents"`
	// CreatedAt and UpdatedAt: creation, and the last change of its
	// settings or status.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// MarshalJSON emits Categories as [] when nil.
func (c Campaign) MarshalJSON() ([]byte, error) {
	type plain Campaign
	if c.Categories == nil {
		c.Categories = []string{}
	}
	return json.Marshal(plain(c))
}

// LedgerLine is one line of an app's append-only credit ledger. Lines are
// never updated or deleted; corrections are new lines.
type LedgerLine struct {
	ID   string    `json:"id"`
	Ts   time.Time `json:"ts"`
	Type LineType  `json:"type"`
	// AmountCents is signed: positive credits the app's wallet.
	AmountCents       int64   `json:"amount_cents"`
	CounterpartyAppID *string `json:"counterparty_app_id"`
	// EventChainID resolves to a chain holding two independent ed25519
	// signatures, one produced by an SDK inside the caller's own signed binary.
	EventChainID *string `json:"event_chain_id"`
	// BalanceAfter is the wallet balance after this line.
	BalanceAfter int64   `json:"balance_after"`
	Note         *string `json:"note"`
}

// LedgerPage is the answer of GET /apps/{app_id}/ledger: lines ordered by
// sequence ascending. NextCursor (additive) is present when more lines
// exist; pass it back as `cursor` to read the next page.
type LedgerPage struct {
	Lines      []LedgerLine `json:"lines"`
	NextCursor *string      `json:"next_cursor,omitempty"`
}

// MarshalJSON emits Lines as [] when nil.
func (p LedgerPage) MarshalJSON() ([]byte, error) {
	type plain LedgerPage
	if p.Lines == nil {
		p.Lines = []LedgerLine{}
	}
	return json.Marshal(plain(p))
}

// Stats is the answer of GET /apps/{app_id}/stats.
type Stats struct {
	Impressions  int64   `json:"impressions"`
	Clicks       int64   `json:"clicks"`
	Installs     int64   `json:"installs"`
	Cleared      int64   `json:"cleared"`
	Retention48h float64 `json:"retention_48h"`
	// FraudRejected maps a stable fraud reason code to a count.
	FraudRejected map[string]int64 `json:"fraud_rejected"`
	FloorCents    int64            `json:"floor_cents"`
	// AvgClearingPriceCents is what contention cost; it equals FloorCents
	// when nothing was contested.
	AvgClearingPriceCents int64 `json:"avg_clearing_price_cents"`
}

// MarshalJSON emits FraudRejected as {} when nil.
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	if s.FraudRejected == nil {
		s.FraudRejected = map[string]int64{}
	}
	return json.Marshal(plain(s))
}

// RateCard is the answer of GET /rate-card (public).
type RateCard struct {
	// Currency is always "EUR".
	Currency string `json:"currency"`
	// TakeRate is always 0.3: the share kept by the service of each cleared install.
	TakeRate float64 `json:"take_rate"`
	// CreditBonus is always 1.2: the multiplier when earnings are taken as credits.
	CreditBonus float64            `json:"credit_bonus"`
	Categories  []RateCardCategory `json:"categories"`
	// ReservedFloorShare is always 0.3.
	ReservedFloorShare float64 `json:"reserved_floor_share"`
	// PricingModel is always "floor_plus_second_price".
	PricingModel string `json:"pricing_model"`
}

// MarshalJSON emits Categories as [] when nil.
func (c RateCard) MarshalJSON() ([]byte, error) {
	type plain RateCard
	if c.Categories == nil {
		c.Categories = []RateCardCategory{}
	}
	return json.Marshal(plain(c))
}

// RateCardCategory is one category of the rate card. Floors are set per
// platform; FloorCentsMin and FloorCentsMax span them.
type RateCardCategory struct {
	Key           string `json:"key"`
	Label         string `json:"label"`
	FloorCentsMin int64  `json:"floor_cents_min"`
	FloorCentsMax int64  `json:"floor_cents_max"`
}

// NetworkStats is the answer of GET /network-stats (public).
type NetworkStats struct {
	// Period names the window the figures cover.
	Period string `json:"period"`
	// ClearingRate is the share of install claims that survive to activated_48h.
	ClearingRate float64 `json:"clearing_rate"`
	// FraudPct is the share of chains rejected by a fraud rule.
	FraudPct float64 `json:"fraud_pct"`
	// AvgCPIByCategory maps a category key to an average cost per install in cents.
	AvgCPIByCategory map[string]int64 `json:"avg_cpi_by_category"`
}

// MarshalJSON emits AvgCPIByCategory as {} when nil.
func (n NetworkStats) MarshalJSON() ([]byte, error) {
	type plain NetworkStats
	if n.AvgCPIByCategory == nil {
		n.AvgCPIByCategory = map[string]int64{}
	}
	return json.Marshal(plain(n))
}

// TopUpRequest is the body of POST /apps/{app_id}/top-up.
type TopUpRequest struct {
	// AmountCents is the credits to purchase; at least 5000.
	AmountCents int64 `json:"amount_cents"`
}

// TopUpResponse is the 200 answer of POST /apps/{app_id}/top-up for a caller
// that does not settle over x402: a person completes payment at CheckoutURL.
// The wallet is credited (a `topup` ledger line) once the payment completes.
//
// A caller that settles over x402 gets 402 with an X402Challenge instead; its
// paid retry (X-PAYMENT header) is answered 200 with the `topup` LedgerLine.
type TopUpResponse struct {
	CheckoutURL string `json:"checkout_url"`
}

// X402Challenge is the 402 body of POST /apps/{app_id}/top-up for a caller
// able to settle machine-to-machine in a dollar stablecoin on a layer-2
// chain (x402 protocol version 1). It is not an Error body.
type X402Challenge struct {
	// X402Version is always 1.
	X402Version int          `json:"x402Version"`
	Accepts     []X402Accept `json:"accepts"`
	// Resource (uri) is the URL being paid for.
	Resource string `json:"resource"`
	// Error says why payment is required (x402 v1 field; additive to the
	// API document), e.g. "X-PAYMENT header is required".
	Error string `json:"error"`
}

// MarshalJSON emits Accepts as [] when nil.
func (c X402Challenge) MarshalJSON() ([]byte, error) {
	type plain X402Challenge
	if c.Accepts == nil {
		c.Accepts = []X402Accept{}
	}
	return json.Marshal(plain(c))
}

// X402Accept is one x402 v1 PaymentRequirements entry of X402Challenge.Accepts.
type X402Accept struct {
	// Scheme is "exact".
	Scheme string `json:"scheme"`
	// Network is "base" or "base-sepolia" (test mode).
	Network string `json:"network"`
	// MaxAmountRequired is the exact amount in the asset's atomic units
	// (USDC: 6 decimals), as a decimal string.
	MaxAmountRequired string `json:"maxAmountRequired"`
	Resource          string `json:"resource"`
	Description       string `json:"description"`
	MimeType          string `json:"mimeType"`
	// PayTo is the recipient address.
	PayTo string `json:"payTo"`
	// MaxTimeoutSeconds bounds the validity window of the payment authorisation.
	MaxTimeoutSeconds int `json:"maxTimeoutSeconds"`
	// Asset is the token contract address.
	Asset string `json:"asset"`
	// Extra is the asset's EIP-712 domain.
	Extra X402Extra `json:"extra"`
}

// X402Extra is the EIP-712 domain of the payment asset (e.g. USDC: name
// "USD Coin" on base, "USDC" on base-sepolia; version "2").
type X402Extra struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// PayoutOnboarding (additive) is the answer of POST
// /v1/apps/{app_id}/payout-account/onboarding: the app's connected account
// and the short-lived link where its owner completes it.
type PayoutOnboarding struct {
	AccountID     string `json:"account_id"`
	OnboardingURL string `json:"onboarding_url"`
}

// PayoutAccountStatus (additive) is the answer of GET
// /v1/apps/{app_id}/payout-account: the connected account as the payment
// processor reports it.
type PayoutAccountStatus struct {
	AccountID        string `json:"account_id"`
	ChargesEnabled   bool   `json:"charges_enabled"`
	PayoutsEnabled   bool   `json:"payouts_enabled"`
	DetailsSubmitted bool   `json:"details_submitted"`
	// RequirementsDue lists what the holder must still provide.
	RequirementsDue []string `json:"requirements_due"`
	// DisabledReason says why the account cannot receive payouts yet.
	DisabledReason *string `json:"disabled_reason"`
}

// PayoutResponse is the 200 answer of POST /apps/{app_id}/payout: a
// connected-account transfer of a withdrawable balance of at least EUR 50.
type PayoutResponse struct {
	TransferID  string `json:"transfer_id"`
	AmountCents int64  `json:"amount_cents"`
	// PayoutID (additive) is the payout's id: the wallet's payout line
	// (written when the amount is reserved, before the transfer exists)
	// says "payout <payout_id>".
	PayoutID string `json:"payout_id"`
}
