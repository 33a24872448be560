// Package scoring runs an app's scoring job (xpromo.JobScoring): it reads
// the four reputation signals (server/reputation) about the app, weighs them
// with reputation.Total, measures the app's behaviour once it has traded
// enough installs, and records the result that GET /v1/apps/{app_id}/score
// shows (docs/reputation.md, docs/apps.md "Score").
//
// The job reads what the vetting gate saw (its latest result's evidence:
// the signer, the declared publisher, the bundle's SUFeedURL), so it waits
// for the gate: while no gate result exists it retries (scoring_gate_pending)
// and the gate queues a scoring run whenever it records one. The signals are
// read outside any transaction; the result, the next scoring job and
// score.updated commit with the job's completion (jobs.Outcome.Apply).
package scoring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/reputation"
	"github.com/xpromo/xpromo/server/reputation/aivis"
	"github.com/xpromo/xpromo/server/reputation/appcast"
	"github.com/xpromo/xpromo/server/reputation/coherence"
	"github.com/xpromo/xpromo/server/reputation/storeratings"
)

// Defaults of the Service's settings.
const (
	// DefaultPeriod is how long after a scoring run the next one is due
	// (the score's next_review_at).
	DefaultPeriod = 7 * 24 * time.Hour
	// DefaultRetrySoon is when a run with a transient reason (a counterpart
	// that was down) is followed by the next one instead.
	DefaultRetrySoon = time.Hour
	// DefaultBehaviorThreshold is the installs an app must have traded for
	// its behaviour to be measured (the API document: 500).
	DefaultBehaviorThreshold = 500
	// DefaultCanaryMinServed is how many canaries an app must have been
	// served, none clicked, for `canary` to be true.
	DefaultCanaryMinServed = 5
	// gateWait is how long a run that found no gate result waits.
	gateWait = time.Minute
)

// Reason codes the scoring job adds to the signals' (docs/apps.md).
const (
	// ReasonCanaryNotMeasured: fewer canaries than the minimum were served
	// to the app since its last reinstatement (docs/apps.md "Canary
	// check"), so `canary` is false without having been measured.
	ReasonCanaryNotMeasured = "canary_not_measured"
	// ReasonCanaryFailed: the app's SDK key signed a click on a canary
	// since its last reinstatement: `canary` is false. It is also the
	// reason of the lifecycle review's suspension for it.
	ReasonCanaryFailed = "canary_failed"
	// ReasonRetentionNotMeasured: the app traded enough installs, but none
	// has left its 48–72 h activation window yet.
	ReasonRetentionNotMeasured = "retention_not_measured"
)

// CodeGatePending is the job error of a run that found no gate result: it
// is retried (the gate also queues a run when it records one).
const CodeGatePending = "scoring_gate_pending"

// Tx is what the scoring job needs from a transaction.
type Tx interface {
	apps.Tx
	// CountComplaints counts the complaints about appID with this status
	// (complaints.Tx).
	CountComplaints(ctx context.Context, appID string, status complaints.Status) (int, error)
	// AppTrade counts the installs appID traded, as publisher or advertiser.
	AppTrade(ctx context.Context, appID string) (Trade, error)
	// CanaryRecord counts the canaries served to appID and those it
	// clicked, since its last reinstatement (ever, if it was never
	// suspended); served ones by UTC day, from the reinstatement's day on.
	CanaryRecord(ctx context.Context, appID string) (Canaries, error)
}

// Canaries is an app's canary record (docs/apps.md "Canary check").
type Canaries struct {
	Served  int64 // canaries its fills answered
	Clicked int64 // canaries whose click token its SDK key signed
}

// Trade counts the chains (docs/attribution.md) in which the app is the
// publisher or the advertiser.
type Trade struct {
	// Installs: chains whose install claim was accepted (installed,
	// activated_48h, cleared or refunded).
	Installs int
	// Retained: installs that sent a heartbeat in their 48–72 h window
	// (activated_48h or cleared).
	Retained int
	// Lapsed: installs refunded because no heartbeat came in the window
	// (refunded, not_activated).
	Lapsed int
	// Silent: the lapsed installs that had sent a heartbeat before the
	// window: the app ran, then stopped reporting.
	Silent int
}

// The signals' sources; *aivis.Client, *appcast.Client and
// *storeratings.Client are the real ones.
type (
	AI interface {
		Check(ctx context.Context, app aivis.App) aivis.Result
	}
	Cadence interface {
		Check(ctx context.Context, feedURL, platform string) appcast.Result
	}
	Reviews interface {
		Check(ctx context.Context, bundleID, platform string) storeratings.Result
	}
)

// Sources are the signals' sources; a nil one is not configured (its
// signal is unavailable and not re-read sooner).
type Sources struct {
	AI      AI
	Cadence Cadence
	Reviews Reviews
}

// ErrNotConfigured is the error of a signal whose source is not configured
// (no model endpoint): it is reported as unavailable, but re-reading it
// sooner would not help.
var ErrNotConfigured = errors.New("scoring: the signal's source is not configured")

// Service runs scoring jobs; its fields are its dependencies.
type Service struct {
	Apps   *apps.Service
	Update func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	View   func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

	// Sources are the signals' sources.
	Sources Sources
	// Sandbox, when set (test mode), are the sources of apps whose domain
	// Reserved reports (server/reputation/sandbox): as the gate's sandbox,
	// reserved names are answered by built-in counterparts.
	Sandbox  *Sources
	Reserved func(domain string) bool

	// Period, RetrySoon, BehaviorThreshold and CanaryMinServed: 0 means
	// the defaults.
	Period            time.Duration
	RetrySoon         time.Duration
	BehaviorThreshold int
	CanaryMinServed   int64
	Now               func() time.Time
	Log               *slog.Logger
}

// Result is what a scoring job records: the score's part and the evidence
// each signal gathered.
type Result struct {
	apps.ScoringResult
	Evidence Evidence `json:"evidence"`
}

// Evidence is what the signals saw.
type Evidence struct {
	AIVisibility AIEvidence        `json:"ai_visibility"`
	Cadence      CadenceEvidence   `json:"cadence"`
	Reviews      ReviewsEvidence   `json:"reviews"`
	Coherence    CoherenceEvidence `json:"coherence"`
	Behavior     BehaviorEvidence  `json:"behavior"`
}

type AIEvidence struct {
	Model       string        `json:"model,omitempty"`
	Answer      *aivis.Answer `json:"answer,omitempty"`
	UserMessage string        `json:"user_message,omitempty"`
}

type CadenceEvidence struct {
	FeedURL     string     `json:"feed_url"`
	Releases    int        `json:"releases"`
	Quarters    int        `json:"quarters"`
	LastRelease *time.Time `json:"last_release,omitempty"`
	// FeedSource says where FeedURL came from (cadenceFeed): FeedFromBundle
	// or FeedFromRegistration; empty when there is no feed.
	FeedSource string `json:"feed_source,omitempty"`
}

type ReviewsEvidence struct {
	Count    int     `json:"count"`
	Average  float64 `json:"average"`
	StoreURL string  `json:"store_url,omitempty"`
}

type CoherenceEvidence struct {
	Pairs   []PairEvidence `json:"pairs"`
	Skipped []string       `json:"skipped"`
}

// PairEvidence is one comparison of the coherence signal (coherence.Pair).
type PairEvidence struct {
	Name   string `json:"name"`
	Agree  bool   `json:"agree"`
	Detail string `json:"detail"`
}

type BehaviorEvidence struct {
	Installs         int `json:"installs"`
	Retained         int `json:"retained"`
	Lapsed           int `json:"lapsed"`
	Silent           int `json:"silent"`
	UpheldComplaints int `json:"upheld_complaints"`
	Threshold        int `json:"threshold"`
	// CanariesServed and CanariesClicked are the app's canary record since
	// its last reinstatement; CanaryMinServed the canaries needed to judge.
	CanariesServed  int64 `json:"canaries_served"`
	CanariesClicked int64 `json:"canaries_clicked"`
	CanaryMinServed int64 `json:"canary_min_served"`
}

func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// facts is what a run reads from the store.
type facts struct {
	app    apps.App
	gate   *gate.Result
	trade  Trade
	upheld int
	canary Canaries
}

// Run is the handler of scoring jobs (jobs.Runner.Handle(xpromo.JobScoring,
// …)): it reads the signals outside any transaction and returns the result
// with what to write when the job completes.
func (s *Service) Run(ctx context.Context, job apps.Job) (jobs.Outcome[Tx], error) {
	var f facts
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		a, ok, err := tx.GetApp(ctx, job.AppID, false)
		if err != nil {
			return err
		}
		if !ok {
			return jobs.Permanent("not_found", "the job's app does not exist")
		}
		f.app = a
		js, err := tx.AppJobs(ctx, a.ID)
		if err != nil {
			return err
		}
		for i := len(js) - 1; i >= 0; i-- {
			if js[i].Kind == xpromo.JobGate && js[i].Result != nil {
				f.gate = new(gate.Result)
				if err := json.Unmarshal(js[i].Result, f.gate); err != nil {
					return fmt.Errorf("scoring: gate job %s: unreadable result: %w", js[i].ID, err)
				}
				break
			}
		}
		if f.trade, err = tx.AppTrade(ctx, a.ID); err != nil {
			return err
		}
		if f.canary, err = tx.CanaryRecord(ctx, a.ID); err != nil {
			return err
		}
		f.upheld, err = tx.CountComplaints(ctx, a.ID, complaints.Upheld)
		return err
	})
	if err != nil {
		return jobs.Outcome[Tx]{}, err
	}
	if f.gate == nil {
		e := jobs.Transient(CodeGatePending, "the vetting gate has not recorded what it saw yet; scoring waits for it")
		e.RetryAfter = gateWait
		return jobs.Outcome[Tx]{}, e
	}
	res, soon := s.score(ctx, f)
	raw, err := json.Marshal(res)
	if err != nil {
		return jobs.Outcome[Tx]{}, err
	}
	return jobs.Outcome[Tx]{Result: raw, Apply: func(ctx context.Context, tx Tx) error {
		return s.apply(ctx, tx, job, res, soon)
	}}, nil
}

// Where the cadence signal's appcast URL came from (CadenceEvidence).
const (
	FeedFromBundle       = "sufeedurl"   // the SUFeedURL of the macOS bundle the gate read
	FeedFromRegistration = "appcast_url" // the registration's appcast_url
)

// cadenceFeed is the appcast the cadence signal reads, and where it came
// from: for a Mac app the SUFeedURL of the bundle the gate read (what the
// app itself polls), else the registration's appcast_url; for a Windows app
// the appcast_url (a PE declares no appcast URL the gate can read:
// WinSparkle's and NetSparkle's are compiled into the app). "" when neither
// is known: cadence_no_feed.
func cadenceFeed(app apps.App, ev gate.Evidence) (url, source string) {
	if app.Platform == xpromo.PlatformMac && ev.Package != nil && ev.Package.FeedURL != "" {
		return ev.Package.FeedURL, FeedFromBundle
	}
	if app.AppcastURL != "" {
		return app.AppcastURL, FeedFromRegistration
	}
	return "", ""
}

// score reads the four signals (the three with I/O at once) and measures
// the behaviour. soon reports a transient reason worth reading again before
// the regular period.
func (s *Service) score(ctx context.Context, f facts) (Result, bool) {
	app, ev := f.app, f.gate.Evidence
	platform := string(app.Platform)
	var (
		wg  sync.WaitGroup
		ai  aivis.Result
		cad appcast.Result
		rev storeratings.Result
	)
	feed, feedSource := cadenceFeed(app, ev)
	src := s.Sources
	if s.Sandbox != nil && s.Reserved != nil && s.Reserved(app.Domain) {
		src = *s.Sandbox
	}
	wg.Add(3)
	go func() {
		defer wg.Done()
		if src.AI == nil {
			ai = aivis.Result{Signal: reputation.Unread(reputation.ReasonAIUnavailable), Err: ErrNotConfigured}
			return
		}
		ai = src.AI.Check(ctx, aivis.App{Name: app.Name, Domain: app.Domain, BundleID: app.BundleID, Platform: platform})
	}()
	go func() {
		defer wg.Done()
		if src.Cadence == nil {
			cad = appcast.Result{Signal: reputation.Unread(reputation.ReasonCadenceFeedUnavailable), Err: ErrNotConfigured}
			return
		}
		cad = src.Cadence.Check(ctx, feed, platform)
	}()
	go func() {
		defer wg.Done()
		if src.Reviews == nil {
			rev = storeratings.Result{Signal: reputation.Unread(reputation.ReasonReviewsUnavailable), Err: ErrNotConfigured}
			return
		}
		rev = src.Reviews.Check(ctx, app.BundleID, platform)
	}()
	facts := coherence.Facts{Name: app.Name, Domain: app.Domain, BundleID: app.BundleID, DownloadURL: app.DownloadURL, Contact: app.ContactEmail}
	if ev.Download != nil && ev.Download.FinalURL != "" {
		facts.DownloadURL = ev.Download.FinalURL // where the download really came from
	}
	if ev.Package != nil {
		facts.Publisher = ev.Package.Publisher
	}
	if sig := ev.Signature; sig != nil {
		facts.SignerOrganization, facts.SignerCommonName, facts.TeamID = sig.SignerOrg, sig.SignerCN, sig.TeamID
	}
	coh := coherence.Check(facts)
	wg.Wait()

	soon := false
	for _, r := range []struct {
		sig reputation.Signal
		err error
		src string
	}{{ai.Signal, ai.Err, "ai_visibility"}, {cad.Signal, cad.Err, "cadence"}, {rev.Signal, rev.Err, "reviews"}} {
		if r.err != nil && r.sig.Reason != "" {
			s.log().Info("reputation signal not read", slog.String("app_id", app.ID), slog.String("signal", r.src),
				slog.String("reason", r.sig.Reason), slog.String("error", r.err.Error()))
		}
		if reputation.Retryable(r.sig.Reason) && !errors.Is(r.err, ErrNotConfigured) {
			soon = true
		}
	}

	rep := reputation.Total(ai.Signal, cad.Signal, rev.Signal, coh.Signal)
	var res Result
	res.Reputation = xpromo.Reputation{Total: rep.Total, AIVisibility: rep.AIVisibility, Cadence: rep.Cadence, Reviews: rep.Reviews, Coherence: rep.Coherence}
	res.Reasons = rep.Reasons

	res.Evidence.AIVisibility = AIEvidence{Model: ai.Model, UserMessage: ai.UserMessage}
	if ai.OK() {
		a := ai.Answer
		res.Evidence.AIVisibility.Answer = &a
	}
	res.Evidence.Cadence = CadenceEvidence{FeedURL: feed, FeedSource: feedSource, Releases: cad.Cadence.Releases, Quarters: cad.Cadence.Quarters}
	if !cad.Cadence.LastRelease.IsZero() {
		t := cad.Cadence.LastRelease.UTC()
		res.Evidence.Cadence.LastRelease = &t
	}
	res.Evidence.Reviews = ReviewsEvidence{Count: rev.Ratings.Count, Average: rev.Ratings.Average, StoreURL: rev.Ratings.StoreURL}
	res.Evidence.Coherence = CoherenceEvidence{Pairs: []PairEvidence{}, Skipped: coh.Skipped}
	if coh.Skipped == nil {
		res.Evidence.Coherence.Skipped = []string{}
	}
	for _, p := range coh.Pairs {
		res.Evidence.Coherence.Pairs = append(res.Evidence.Coherence.Pairs, PairEvidence{Name: p.Name, Agree: p.Agree, Detail: p.Detail})
	}
	if res.Evidence.Coherence.Skipped == nil {
		res.Evidence.Coherence.Skipped = []string{}
	}

	threshold := orDefault(s.BehaviorThreshold, DefaultBehaviorThreshold)
	t := f.trade
	minServed := orDefault(s.CanaryMinServed, DefaultCanaryMinServed)
	res.Evidence.Behavior = BehaviorEvidence{Installs: t.Installs, Retained: t.Retained, Lapsed: t.Lapsed, Silent: t.Silent,
		UpheldComplaints: f.upheld, Threshold: threshold,
		CanariesServed: f.canary.Served, CanariesClicked: f.canary.Clicked, CanaryMinServed: minServed}
	if t.Installs >= threshold {
		b, reasons := Behavior(t, f.upheld, f.canary, minServed)
		res.Behavior = &b
		res.Reasons = append(res.Reasons, reasons...)
	}
	return res, soon
}

// Behavior measures an app's behaviour from its trade and its upheld
// complaints (docs/apps.md, "Behaviour"), with the reasons of what could
// not be measured:
//
//   - retention_48h = retained / (retained + lapsed): of the installs whose
//     activation window has closed, the share that sent a heartbeat in it;
//   - uninstall_rate = silent / (retained + lapsed): the share that ran
//     (sent a heartbeat) and then went silent before the window — what the
//     network can see of an uninstall;
//   - complaints: the upheld complaints about the app;
//   - canary: true when at least minServed canaries were served to the app
//     and it clicked none; false with canary_failed when it clicked any;
//     false with canary_not_measured while fewer were served (all since
//     its last reinstatement).
func Behavior(t Trade, upheld int, c Canaries, minServed int64) (xpromo.Behavior, []string) {
	b := xpromo.Behavior{Complaints: float64(upheld)}
	reasons := []string{}
	if decided := t.Retained + t.Lapsed; decided > 0 {
		b.Retention48h = ratio(t.Retained, decided)
		b.UninstallRate = ratio(t.Silent, decided)
	} else {
		reasons = append(reasons, ReasonRetentionNotMeasured)
	}
	switch {
	case c.Clicked > 0:
		reasons = append(reasons, ReasonCanaryFailed)
	case c.Served < minServed:
		reasons = append(reasons, ReasonCanaryNotMeasured)
	default:
		b.Canary = true
	}
	return b, reasons
}

// ratio is n/d rounded to four decimals.
func ratio(n, d int) float64 { return math.Round(float64(n)/float64(d)*1e4) / 1e4 }

// apply records what the run implies, in the transaction that completes
// job (which already holds its result): the next scoring job and, when the
// score's content changed, score.updated.
func (s *Service) apply(ctx context.Context, tx Tx, job apps.Job, res Result, soon bool) error {
	a, ok, err := tx.GetApp(ctx, job.AppID, true)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("scoring: app %s vanished", job.AppID)
	}
	js, err := tx.AppJobs(ctx, a.ID)
	if err != nil {
		return err
	}
	// A rejected app is not re-scored on a schedule: the review or re-check
	// that reopens it queues the gate, whose result queues scoring.
	if a.Status != xpromo.AppStatusRejected {
		next := s.now().Add(orDefault(s.Period, DefaultPeriod))
		if soon {
			next = s.now().Add(orDefault(s.RetrySoon, DefaultRetrySoon))
		}
		if _, err := apps.QueueJob(ctx, tx, a.ID, xpromo.JobScoring, next, s.now()); err != nil {
			return err
		}
	}
	var prev *apps.ScoringResult
	for i := len(js) - 1; i >= 0; i-- {
		if j := js[i]; j.Kind == xpromo.JobScoring && j.Result != nil && j.ID != job.ID {
			prev = new(apps.ScoringResult)
			if err := json.Unmarshal(j.Result, prev); err != nil {
				prev = nil
			}
			break
		}
	}
	if prev != nil && sameScore(*prev, res.ScoringResult) {
		return nil
	}
	return s.Apps.ScoreUpdated(ctx, tx, a.ID)
}

func sameScore(a, b apps.ScoringResult) bool {
	if a.Reputation != b.Reputation || !slices.Equal(a.Reasons, b.Reasons) || (a.Behavior == nil) != (b.Behavior == nil) {
		return false
	}
	return a.Behavior == nil || *a.Behavior == *b.Behavior
}
