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
	// ReasonGatePending: the vetting gate has not run yet (its job is queued
	// or running); the gate booleans are false until it has.
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
)

// GateResult is the result a gate job records: the five booleans of
// Score.gate and the reason codes of the checks that failed or could not run.
type GateResult struct {
	xpromo.Gate
	Reasons []string `json:"reasons"`
}

// ScoringResult is the result a scoring job records.
type ScoringResult struct {
	Reputation xpromo.Reputation `json:"reputation"`
	Reasons    []string          `json:"reasons"`
}

var reasonCode = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Score returns the app's Score. Nothing in it is invented: the gate
// booleans come from the latest gate result, the reputation from the latest
// scoring result, and every gap is explained in reasons.
func (s *Service) Score(ctx context.Context, appID string) (xpromo.Score, error) {
	var sc xpromo.Score
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		sc, err = scoreIn(ctx, tx, appID)
		return err
	})
	return sc, err
}

// scoreIn reads the app's Score inside tx: what GET /score shows, and what
// score.updated carries when the operation running in tx changed it.
func scoreIn(ctx context.Context, tx Tx, appID string) (xpromo.Score, error) {
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

	if g := latest(jobs, xpromo.JobGate, false); g != nil && !finished(g.Status) {
		reasons = append(reasons, ReasonGatePending)
	} else if g != nil && g.Status == xpromo.JobFailed && g.Result == nil {
		reasons = append(reasons, ReasonGateFailed)
	}
	if g := latest(jobs, xpromo.JobGate, true); g != nil {
		var r GateResult
		if err := json.Unmarshal(g.Result, &r); err != nil {
			return xpromo.Score{}, fmt.Errorf("apps: gate job %s: unreadable result: %w", g.ID, err)
		}
		sc.Gate = r.Gate
		reasons = append(reasons, r.Reasons...)
	}
	if j := latest(jobs, xpromo.JobScoring, true); j != nil {
		var r ScoringResult
		if err := json.Unmarshal(j.Result, &r); err != nil {
			return xpromo.Score{}, fmt.Errorf("apps: scoring job %s: unreadable result: %w", j.ID, err)
		}
		sc.Reputation = r.Reputation
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

// scoreUpdated writes score.updated for the app, its score as it stands in
// tx, in tx: every operation that changes an app's status (or registers
// it) calls it last, so the event commits with the change it announces.
func (s *Service) scoreUpdated(ctx context.Context, tx Tx, appID string) error {
	sc, err := scoreIn(ctx, tx, appID)
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
