package apps

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/outbox"
)

// Reason codes this package puts in Score.reasons (docs/apps.md lists them
// with those the gate and scoring jobs add).
const (
	// ReasonGatePending: the vetting gate has not decided yet: its job is
	// running, due, or retrying before any result; the gate booleans are
	// false until it has run.
	ReasonGatePending = "gate_pending"
	// ReasonGateFailed: the last gate job failed without an outcome.
	ReasonGateFailed = "gate_failed"
	// ReasonReputationPending: no scoring job has produced a reputation
	// yet; the reputation integers are 0 until one has.
	ReasonReputationPending = "reputation_pending"
	// ReasonOperatorRejected / ReasonOperatorSuspended: an operator
	// rejected or suspended the app (the operator's note is in the admin
	// view, not here).
	ReasonOperatorRejected  = "operator_rejected"
	ReasonOperatorSuspended = "operator_suspended"
	// ReasonOperatorApproved: an operator approved the app although its
	// latest gate result has a check that did not pass (the override is in
	// the audit log).
	ReasonOperatorApproved = "operator_approved"
)

// GateResult is the result a gate job records: the five booleans of
// Score.gate and the reason codes of the checks that failed or could not run.
type GateResult struct {
	xpromo.Gate
	Reasons []string `json:"reasons"`
	// RetryAfter is when a check that failed for a time-bound reason can
	// pass (gate_domain_too_young: the domain's eligibility date); the
	// score shows it as retry_after.
	RetryAfter *time.Time `json:"retry_after,omitempty"`
}

// passed reports whether every gate boolean is true.
func (r GateResult) passed() bool {
	g := r.Gate
	return g.Signed && g.MalwareClean && g.DomainAgeOK && g.ContactVerified && g.BundleMatch
}

// ScoringResult is the result a scoring job records.
type ScoringResult struct {
	Reputation xpromo.Reputation `json:"reputation"`
	// Behavior is measured once the app has traded enough installs
	// (server/scoring); null before.
	Behavior *xpromo.Behavior `json:"behavior"`
	Reasons  []string         `json:"reasons"`
}

var reasonCode = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Score returns the app's Score. Nothing in it is invented: the gate
// booleans come from the latest gate result, the reputation from the latest
// scoring result, and every gap is explained in reasons.
func (s *Service) Score(ctx context.Context, appID string) (xpromo.Score, error) {
	var sc xpromo.Score
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		sc, err = scoreIn(ctx, tx, appID, s.now())
		return err
	})
	return sc, err
}

// scoreIn reads the app's Score inside tx: what GET /score shows, and what
// score.updated carries when the operation running in tx changed it.
func scoreIn(ctx context.Context, tx Tx, appID string, now time.Time) (xpromo.Score, error) {
	app, ok, err := tx.GetApp(ctx, appID, false)
	if err != nil {
		return xpromo.Score{}, err
	}
	if !ok {
		return xpromo.Score{}, notFound()
	}
	jobs, err := tx.AppJobs(ctx, appID)
	if err != nil {
		return xpromo.Score{}, err
	}
	history, err := tx.AppStatusHistory(ctx, appID)
	if err != nil {
		return xpromo.Score{}, err
	}
	sc := xpromo.Score{Status: app.Status, NextReviewAt: app.CreatedAt.Add(ReviewDelay)}
	var reasons []string
	if n := len(history); n > 0 && history[n-1].To == app.Status &&
		(app.Status == xpromo.AppStatusRejected || app.Status == xpromo.AppStatusSuspended) {
		switch last := history[n-1]; {
		case last.Actor == ActorAdmin:
			reasons = append(reasons, "operator_"+string(app.Status))
		case reasonCode.MatchString(last.Reason):
			reasons = append(reasons, last.Reason) // e.g. gate_domain_too_young
		}
	}

	var gate *GateResult
	if g := latest(jobs, xpromo.JobGate, true); g != nil {
		gate = new(GateResult)
		if err := json.Unmarshal(g.Result, gate); err != nil {
			return xpromo.Score{}, fmt.Errorf("apps: gate job %s: unreadable result: %w", g.ID, err)
		}
	}
	if gate != nil && !gate.passed() && approvedByOperator(app.Status, history) {
		reasons = append(reasons, ReasonOperatorApproved)
	}

	if g := latest(jobs, xpromo.JobGate, false); g != nil && !finished(g.Status) &&
		// A re-check the gate scheduled for later (at a challenge's expiry,
		// a domain's eligibility) is not pending: next_review_at shows it.
		(g.Status == xpromo.JobRunning || !g.RunAfter.After(now) || gate == nil) {
		reasons = append(reasons, ReasonGatePending)
	} else if g != nil && g.Status == xpromo.JobFailed && g.Result == nil {
		reasons = append(reasons, ReasonGateFailed)
	}
	if gate != nil {
		sc.Gate = gate.Gate
		sc.RetryAfter = gate.RetryAfter
		reasons = append(reasons, gate.Reasons...)
	}
	if j := latest(jobs, xpromo.JobScoring, true); j != nil {
		var r ScoringResult
		if err := json.Unmarshal(j.Result, &r); err != nil {
			return xpromo.Score{}, fmt.Errorf("apps: scoring job %s: unreadable result: %w", j.ID, err)
		}
		sc.Reputation, sc.Behavior = r.Reputation, r.Behavior
		reasons = append(reasons, r.Reasons...)
	} else {
		reasons = append(reasons, ReasonReputationPending)
	}

	var earliest *time.Time
	for _, j := range jobs {
		if j.Status == xpromo.JobQueued && (earliest == nil || j.RunAfter.Before(*earliest)) {
			earliest = &j.RunAfter
		}
	}
	if earliest != nil {
		sc.NextReviewAt = *earliest
	}
	sc.Reasons = dedupe(reasons)
	return sc, nil
}

// approvedByOperator reports whether the app is approved (or trading on
// from an approval) and its approval was an operator's.
func approvedByOperator(status xpromo.AppStatus, history []StatusChange) bool {
	switch status {
	case xpromo.AppStatusApproved, xpromo.AppStatusThrottled, xpromo.AppStatusLive:
	default:
		return false
	}
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].To == xpromo.AppStatusApproved {
			return history[i].Actor == ActorAdmin
		}
	}
	return false
}

// ScoreUpdated writes score.updated for the app in tx, for an operation of
// another domain that changed the score without moving the status (a gate
// result recorded): Transition already writes it for status changes.
func (s *Service) ScoreUpdated(ctx context.Context, tx Tx, appID string) error {
	return s.scoreUpdated(ctx, tx, appID)
}

// scoreUpdated writes score.updated for the app, its score as it stands in
// tx, in tx: every operation that changes an app's status (or registers
// it) calls it last, so the event commits with the change it announces.
func (s *Service) scoreUpdated(ctx context.Context, tx Tx, appID string) error {
	sc, err := scoreIn(ctx, tx, appID, s.now())
	if err != nil {
		return err
	}
	return tx.InsertOutbox(ctx, []outbox.Event{outbox.New(appID, xpromo.EventScoreUpdated, xpromo.ScoreEventData{Score: sc}, s.now())})
}

func finished(s xpromo.JobStatus) bool { return s == xpromo.JobSucceeded || s == xpromo.JobFailed }

// latest returns the newest job of kind (jobs are oldest first), or with
// withResult the newest one that recorded a result.
func latest(jobs []Job, kind xpromo.JobKind, withResult bool) *Job {
	for i := len(jobs) - 1; i >= 0; i-- {
		if jobs[i].Kind == kind && (!withResult || jobs[i].Result != nil) {
			return &jobs[i]
		}
	}
	return nil
}

func dedupe(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
