// Package lifecycle moves app statuses by themselves where the network's
// own data decides: a periodic review (Service.Review) suspends approved,
// throttled and live apps whose fraud rate as publisher, whose churn (the
// installs they sent that did not stick), whose canary clicks or whose
// upheld complaints cross the bar, reinstates an app it suspended for
// complaints once they have aged out of the window, and claws back the
// cleared earnings of an app
// suspended for fraud, one chain per transaction, exactly once.
//
// The thresholds are Rules (docs/apps.md "Lifecycle"); deciding from the
// numbers (Rules.Verdict) is free of I/O. The review is run by the server's
// background loop (wire.Server.RunBackground) every Rules.ReviewEvery and by
// tests directly; it derives everything from stored state, so a review cut
// short by a crash is resumed by the next one.
package lifecycle

import (
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/market"
)

// Rules are the lifecycle's thresholds. The zero value of a field means its
// default (Default…).
type Rules struct {
	// FraudWindow is how far back the fraud rate looks (7 days): an app's
	// install claims as publisher in the window, counted from its last
	// reinstatement if that is later.
	FraudWindow time.Duration
	// FraudMinClaims is the smallest sample the fraud rate is judged on
	// (20 claims): below it no app is suspended for fraud.
	FraudMinClaims int64
	// FraudMaxRate is the fraud rate (claims rejected with a fraud_ code ÷
	// claims) at or above which an app is suspended (0.3).
	FraudMaxRate float64
	// ChurnMinDecided is the smallest sample the churn rule judges (20
	// decided installs): installs the app sent as publisher in the fraud
	// window (from its last reinstatement, if later) whose activation
	// window closed — retained (activated_48h, cleared) or refunded
	// not_activated.
	ChurnMinDecided int64
	// ChurnMinRetention is the share of those decided installs that must
	// be retained (0.2): below it the app is suspended for churn
	// (churn_exceeded, fraud class: installs that do not stick are farmed
	// or incentivised).
	ChurnMinRetention float64
	// MaxUpheldComplaints is the number of upheld complaints about an app,
	// resolved in the complaints window and since its last reinstatement,
	// that suspends it (3).
	MaxUpheldComplaints int64
	// ComplaintsWindow is how long an upheld complaint counts against an
	// app (90 days): a review reinstates an app it suspended for
	// complaints once fewer than MaxUpheldComplaints are left in it.
	ComplaintsWindow time.Duration
	// ClawbackWindow is how long before its suspension for fraud a chain
	// may have cleared and still be clawed back (30 days). A chain that
	// clears anyway while the app stays suspended (the sweep read its status
	// just before the suspension committed; otherwise the sweep refunds it)
	// is clawed back too.
	ClawbackWindow time.Duration
	// ReviewEvery is how often the server runs the review (5 minutes).
	ReviewEvery time.Duration
	// CanaryMaxClicks is the number of canaries (docs/apps.md "Canary
	// check") an app's SDK key signed clicks for, since its last
	// reinstatement, that suspends it for fraud (1).
	CanaryMaxClicks int64

	// LiveMinCleared and LiveMinRetention are the go-live bar applied by
	// the market at each clearing (market.Service.LiveMinCleared and
	// LiveMinRetention, which the server sets from these): at least 10
	// charged installs bought in the last 30 days, with a 48-hour retention
	// of at least 0.4.
	LiveMinCleared   int64
	LiveMinRetention float64
}

// Defaults.
const (
	DefaultFraudWindow         = 7 * 24 * time.Hour
	DefaultFraudMinClaims      = 20
	DefaultFraudMaxRate        = 0.3
	DefaultChurnMinDecided     = 20
	DefaultChurnMinRetention   = 0.2
	DefaultMaxUpheldComplaints = 3
	DefaultComplaintsWindow    = 90 * 24 * time.Hour
	DefaultClawbackWindow      = 30 * 24 * time.Hour
	DefaultReviewEvery         = 5 * time.Minute
	DefaultCanaryMaxClicks     = 1
	DefaultLiveMinCleared      = market.DefaultLiveMinCleared
	DefaultLiveMinRetention    = market.DefaultLiveMinRetention
)

// WithDefaults returns r with every zero (or negative) field set to its
// default.
func (r Rules) WithDefaults() Rules {
	if r.FraudWindow <= 0 {
		r.FraudWindow = DefaultFraudWindow
	}
	if r.FraudMinClaims <= 0 {
		r.FraudMinClaims = DefaultFraudMinClaims
	}
	if r.FraudMaxRate <= 0 {
		r.FraudMaxRate = DefaultFraudMaxRate
	}
	if r.ChurnMinDecided <= 0 {
		r.ChurnMinDecided = DefaultChurnMinDecided
	}
	if r.ChurnMinRetention <= 0 {
		r.ChurnMinRetention = DefaultChurnMinRetention
	}
	if r.MaxUpheldComplaints <= 0 {
		r.MaxUpheldComplaints = DefaultMaxUpheldComplaints
	}
	if r.ComplaintsWindow <= 0 {
		r.ComplaintsWindow = DefaultComplaintsWindow
	}
	if r.ClawbackWindow <= 0 {
		r.ClawbackWindow = DefaultClawbackWindow
	}
	if r.ReviewEvery <= 0 {
		r.ReviewEvery = DefaultReviewEvery
	}
	if r.CanaryMaxClicks <= 0 {
		r.CanaryMaxClicks = DefaultCanaryMaxClicks
	}
	if r.LiveMinCleared <= 0 {
		r.LiveMinCleared = DefaultLiveMinCleared
	}
	if r.LiveMinRetention <= 0 {
		r.LiveMinRetention = DefaultLiveMinRetention
	}
	return r
}

// Reason codes of the moves the review makes (app_status_history, the
// score's reasons).
const (
	ReasonFraudRate   = apps.ReasonFraudRate // actor fraud; its cleared earnings are clawed back
	ReasonChurn       = apps.ReasonChurn     // actor fraud; its cleared earnings are clawed back
	ReasonComplaints  = "complaints_upheld"  // actor system; no clawback
	ReasonCleanReview = "clean_review"       // actor system: a complaints suspension lifted
	// ReasonCanaryFailed: the app clicked canaries (actor fraud); its
	// cleared earnings are clawed back.
	ReasonCanaryFailed = apps.ReasonCanaryFailed
)

// ReasonFraud is the reason an operator gives to suspend an app for fraud:
// `suspend` with reason "fraud" claws back like fraud_rate_exceeded.
const ReasonFraud = apps.ReasonOperatorFraud

// ClawsBack reports whether a suspension with this reason claws back the
// app's cleared earnings as publisher: the fraud class
// (apps.FraudSuspensions, which the sweep also reads).
func ClawsBack(reason string) bool { return apps.SuspendedForFraud(reason) }

// Reviewed are the statuses the review may suspend.
var Reviewed = []xpromo.AppStatus{xpromo.AppStatusApproved, xpromo.AppStatusThrottled, xpromo.AppStatusLive}

// Signals are what the review judges an app on.
type Signals struct {
	AppID  string
	Status xpromo.AppStatus
	// Claims counts the install claims naming the app as publisher whose
	// two signatures verified (accepted, or rejected by a rule), since the
	// window's start or the app's last reinstatement, whichever is later.
	// Claims refused before verification (a replayed or forged token) are
	// not counted: anyone who saw a click token could send them.
	Claims int64
	// FraudRejected counts those of Claims rejected with a fraud_ code.
	FraudRejected int64
	// Decided counts the installs of Claims whose activation window
	// closed: retained (activated_48h or cleared) or refunded
	// not_activated. Retained counts the retained ones.
	Decided, Retained int64
	// Upheld counts the upheld complaints about the app resolved in the
	// complaints window and since its last reinstatement.
	Upheld int64
	// CanaryClicks counts the canaries whose click token the app's SDK key
	// signed since its last reinstatement (ever, if never suspended).
	CanaryClicks int64
}

// Verdict is what the review decides for one app.
type Verdict struct {
	Suspend bool
	Reason  string // ReasonFraudRate, ReasonChurn, ReasonCanaryFailed or ReasonComplaints
	Actor   string // apps.ActorFraud or apps.ActorSystem
}

// judgement is where one rule leaves an app's signals.
type judgement int

const (
	tooFew   judgement = iota // below the rule's minimum sample: not judged
	within                    // judged, clear of the bar
	breached                  // judged, across the bar: the review suspends
)

// The suspension rules, one function each: the review's Verdict and the
// thresholds read (Thresholds) both judge through them.

// fraudRate: on at least FraudMinClaims claims, the share rejected with a
// fraud_ code is at or above FraudMaxRate.
func (r Rules) fraudRate(s Signals) judgement {
	switch {
	case s.Claims < r.FraudMinClaims:
		return tooFew
	case float64(s.FraudRejected) >= r.FraudMaxRate*float64(s.Claims):
		return breached
	}
	return within
}

// churn: on at least ChurnMinDecided decided installs, the retained share
// is below ChurnMinRetention.
func (r Rules) churn(s Signals) judgement {
	switch {
	case s.Decided < r.ChurnMinDecided:
		return tooFew
	case float64(s.Retained) < r.ChurnMinRetention*float64(s.Decided):
		return breached
	}
	return within
}

// canaries: at least CanaryMaxClicks canary clicks.
func (r Rules) canaries(s Signals) judgement {
	if s.CanaryClicks >= r.CanaryMaxClicks {
		return breached
	}
	return within
}

// complaints: at least MaxUpheldComplaints upheld complaints.
func (r Rules) complaints(s Signals) judgement {
	if s.Upheld >= r.MaxUpheldComplaints {
		return breached
	}
	return within
}

// Verdict decides whether the app the signals describe is suspended: the
// fraud class first (it also claws back) — fraud rate, then churn, then
// canaries — then complaints.
func (r Rules) Verdict(s Signals) Verdict {
	r = r.WithDefaults()
	if r.fraudRate(s) == breached {
		return Verdict{Suspend: true, Reason: ReasonFraudRate, Actor: apps.ActorFraud}
	}
	if r.churn(s) == breached {
		return Verdict{Suspend: true, Reason: ReasonChurn, Actor: apps.ActorFraud}
	}
	if r.canaries(s) == breached {
		return Verdict{Suspend: true, Reason: ReasonCanaryFailed, Actor: apps.ActorFraud}
	}
	if r.complaints(s) == breached {
		return Verdict{Suspend: true, Reason: ReasonComplaints, Actor: apps.ActorSystem}
	}
	return Verdict{}
}

// Churned reports whether the installs the app sent as publisher churn:
// on at least ChurnMinDecided decided installs, the retained share is below
// ChurnMinRetention.
func (r Rules) Churned(s Signals) bool { return r.WithDefaults().churn(s) == breached }

// Cleared reports whether an app the review suspended for complaints has a
// clean record again: fewer than MaxUpheldComplaints upheld complaints left
// in the complaints window.
func (r Rules) Cleared(upheld int64) bool {
	return r.WithDefaults().complaints(Signals{Upheld: upheld}) != breached
}

// LiveBar is the go-live bar of these rules, as the market applies it.
func (r Rules) LiveBar() market.LiveBar {
	r = r.WithDefaults()
	return market.LiveBar{MinCleared: r.LiveMinCleared, MinRetention: r.LiveMinRetention}
}
