package xpromo

// Platform is the desktop platform an app ships for.
type Platform string

// Platforms.
const (
	PlatformMac Platform = "mac" // macOS
	PlatformWin Platform = "win" // Windows
)

// Valid reports whether p is one of the documented platforms.
func (p Platform) Valid() bool { return p == PlatformMac || p == PlatformWin }

// AppStatus is the status of a registered app.
//
// A registration starts `pending` (the vetting gate and a scoring job are
// queued). The gate moves it to `approved` (every gate boolean true) or
// `rejected`; an approved app becomes `throttled` on its first trade
// (delivery capped per day), then `live` once it has cleared installs with
// good retention. Fraud or complaints move it to `suspended`.
type AppStatus string

// App statuses.
const (
	AppStatusPending   AppStatus = "pending"
	AppStatusApproved  AppStatus = "approved"
	AppStatusThrottled AppStatus = "throttled"
	AppStatusLive      AppStatus = "live"
	AppStatusSuspended AppStatus = "suspended"
	AppStatusRejected  AppStatus = "rejected"
)

// Valid reports whether s is one of the documented app statuses.
func (s AppStatus) Valid() bool {
	switch s {
	case AppStatusPending, AppStatusApproved, AppStatusThrottled,
		AppStatusLive, AppStatusSuspended, AppStatusRejected:
		return true
	}
	return false
}

// CampaignStatus is the status of a campaign.
//
// A new campaign is `throttled`; it becomes `active` when its app is `live`
// and funded. Pause moves it to `paused`; resume returns it to whichever of
// `throttled` or `active` applies.
type CampaignStatus string

// Campaign statuses.
const (
	CampaignStatusThrottled CampaignStatus = "throttled"
	CampaignStatusActive    CampaignStatus = "active"
	CampaignStatusPaused    CampaignStatus = "paused"
)

// Valid reports whether s is one of the documented campaign statuses.
func (s CampaignStatus) Valid() bool {
	switch s {
	case CampaignStatusThrottled, CampaignStatusActive, CampaignStatusPaused:
		return true
	}
	return false
}

// LineType is the kind of a ledger line.
type LineType string

// Ledger line types.
const (
	LineTopup         LineType = "topup"          // wallet funded (checkout or x402)
	LineEarn          LineType = "earn"           // publisher earnings for a cleared install
	LineCharge        LineType = "charge"         // advertiser charged for a cleared install
	LineEscrowHold    LineType = "escrow_hold"    // advertiser funds held at install claim
	LineEscrowRelease LineType = "escrow_release" // held funds released (on clearing, or refund)
	LineClawback      LineType = "clawback"       // publisher earnings taken back (fraud after clearing)
	LinePayout        LineType = "payout"         // balance paid out by transfer
	LineAdjustment    LineType = "adjustment"     // operator correction or refund; carries a note
)

// Valid reports whether t is one of the documented line types.
func (t LineType) Valid() bool {
	switch t {
	case LineTopup, LineEarn, LineCharge, LineEscrowHold, LineEscrowRelease,
		LineClawback, LinePayout, LineAdjustment:
		return true
	}
	return false
}

// Period is the reporting window of GET /apps/{app_id}/stats.
type Period string

// Periods.
const (
	PeriodLast7Days  Period = "last_7_days"
	PeriodLast30Days Period = "last_30_days"
	PeriodLast90Days Period = "last_90_days"
)

// DefaultPeriod is the period the server uses when the query omits `period`.
const DefaultPeriod = PeriodLast30Days

// Valid reports whether p is one of the documented periods.
func (p Period) Valid() bool {
	switch p {
	case PeriodLast7Days, PeriodLast30Days, PeriodLast90Days:
		return true
	}
	return false
}
