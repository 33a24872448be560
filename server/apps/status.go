package apps

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/txunit"
)

// next lists the statuses each status may move to through Transition. A
// suspended app leaves suspension only through Reinstate.
var next = map[xpromo.AppStatus][]xpromo.AppStatus{
	xpromo.AppStatusPending:   {xpromo.AppStatusApproved, xpromo.AppStatusRejected},
	xpromo.AppStatusApproved:  {xpromo.AppStatusThrottled, xpromo.AppStatusSuspended},
	xpromo.AppStatusThrottled: {xpromo.AppStatusLive, xpromo.AppStatusSuspended},
	xpromo.AppStatusLive:      {xpromo.AppStatusSuspended},
	xpromo.AppStatusRejected:  {xpromo.AppStatusPending},
}

// Transition moves the app to status to inside tx, writing the status-history
// row in the same transaction. It refuses, with invalid_transition, any move
// the status machine (docs/apps.md) does not allow. Other domains call it
// from their own transactions: the gate (pending → approved or rejected),
// trading (approved → throttled → live), fraud (→ suspended). reason should
// be a stable lowercase code for every actor but admin.
func (s *Service) Transition(ctx context.Context, tx Tx, appID string, to xpromo.AppStatus, reason, actor string) (App, error) {
	a, err := lockApp(ctx, tx, appID)
	if err != nil {
		return App{}, err
	}
	if !slices.Contains(next[a.Status], to) {
		return App{}, apperr.New(apperr.InvalidTransition, "an app cannot move from %s to %s", a.Status, to)
	}
	return s.move(ctx, tx, a, to, reason, actor)
}

// Reinstate returns a suspended app, inside tx, to the status it had before
// its suspension; any other app is invalid_transition.
func (s *Service) Reinstate(ctx context.Context, tx Tx, appID, reason, actor string) (App, error) {
	a, err := lockApp(ctx, tx, appID)
	if err != nil {
		return App{}, err
	}
	if a.Status != xpromo.AppStatusSuspended {
		return App{}, apperr.New(apperr.InvalidTransition, "only a suspended app can be reinstated; this one is %s", a.Status)
	}
	before, err := statusBeforeSuspension(ctx, tx, appID)
	if err != nil {
		return App{}, err
	}
	if before == "" {
		return App{}, fmt.Errorf("apps: suspended app %s has no suspension in its history", appID)
	}
	return s.move(ctx, tx, a, before, reason, actor)
}

// move records a's change to status to: the app row, its history row and
// score.updated (the status is part of the score).
func (s *Service) move(ctx context.Context, tx Tx, a App, to xpromo.AppStatus, reason, actor string) (App, error) {
	now := s.now()
	if err := tx.SetAppStatus(ctx, a.ID, to, now); err != nil {
		return App{}, err
	}
	if err := tx.InsertAppStatusChange(ctx, StatusChange{AppID: a.ID, From: a.Status, To: to, Reason: reason, Actor: actor, At: now}); err != nil {
		return App{}, err
	}
	a.Status, a.UpdatedAt = to, now
	return a, s.scoreUpdated(ctx, tx, a.ID)
}

// statusBeforeSuspension is where a suspended app is reinstated to: the
// "from" of the history row that suspended it (nothing else moves a
// suspended app, so it is the last row).
func statusBeforeSuspension(ctx context.Context, tx Tx, appID string) (xpromo.AppStatus, error) {
	h, err := tx.AppStatusHistory(ctx, appID)
	if err != nil {
		return "", err
	}
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].To == xpromo.AppStatusSuspended {
			return h[i].From, nil
		}
	}
	return "", nil
}

// Reasons of the suspensions that mean fraud. The lifecycle review
// suspends for the first two; an operator suspends with reason exactly
// "fraud".
const (
	ReasonFraudRate     = "fraud_rate_exceeded" // the lifecycle review: fraud rate as publisher over the bar
	ReasonChurn         = "churn_exceeded"      // the lifecycle review: the installs it published do not stick
	ReasonOperatorFraud = "fraud"               // an operator's suspend, with this reason
	ReasonCanaryFailed  = "canary_failed"       // the lifecycle review: its SDK key signed clicks for canaries
)

// FraudSuspensions are the suspension reasons of the fraud class: the
// lifecycle review claws back the cleared earnings of a publisher
// suspended for one of them, and the sweep refunds, rather than pays, the
// chains such a publisher sent (docs/apps.md "Lifecycle").
var FraudSuspensions = []string{ReasonFraudRate, ReasonChurn, ReasonCanaryFailed, ReasonOperatorFraud}

// SuspendedForFraud reports whether a suspension with this reason (the
// reason of the history row that suspended the app, matched exactly) is of
// the fraud class.
func SuspendedForFraud(reason string) bool { return slices.Contains(FraudSuspensions, reason) }

// Action is an operator action on an app.
type Action string

// Operator actions.
const (
	Approve   Action = "approve"   // pending → approved
	Reject    Action = "reject"    // pending → rejected (reason required)
	Suspend   Action = "suspend"   // approved | throttled | live → suspended
	Reinstate Action = "reinstate" // suspended → the status before suspension
	Review    Action = "review"    // rejected → pending, with the gate and scoring queued again
)

// Actions lists the operator actions.
var Actions = []Action{Approve, Reject, Suspend, Reinstate, Review}

var actionTarget = map[Action]xpromo.AppStatus{
	Approve: xpromo.AppStatusApproved,
	Reject:  xpromo.AppStatusRejected,
	Suspend: xpromo.AppStatusSuspended,
	Review:  xpromo.AppStatusPending,
}

// AppView is an app with its status history, as operators see it.
type AppView struct {
	App     App
	History []StatusChange
}

// Act applies an operator action: the status change, its history row and the
// audit row commit in one transaction. A review also queues the gate and a
// scoring job again.
func (s *Service) Act(ctx context.Context, appID string, action Action, reason string) (AppView, error) {
	if !slices.Contains(Actions, action) {
		return AppView{}, apperr.New(apperr.NotFound, "no admin action %q", action)
	}
	if action == Reject && reason == "" {
		e := apperr.New(apperr.MissingField, "reason is required to reject an app")
		e.Field = "reason"
		return AppView{}, e
	}
	var view AppView
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		before, err := lockApp(ctx, tx, appID)
		if err != nil {
			return err
		}
		if action == Review {
			// Queued before the move, so the score.updated it writes shows
			// them (gate_pending, next_review_at); a refused move rolls
			// them back with it.
			for _, kind := range []xpromo.JobKind{xpromo.JobScoring, xpromo.JobGate} {
				if err := tx.InsertJob(ctx, newJob(appID, kind, s.now())); err != nil {
					return err
				}
			}
		}
		var a App
		if action == Reinstate {
			a, err = s.Reinstate(ctx, tx, appID, reason, ActorAdmin)
		} else {
			a, err = s.Transition(ctx, tx, appID, actionTarget[action], reason, ActorAdmin)
		}
		if err != nil {
			return err
		}
		to := a.Status
		detail, err := json.Marshal(map[string]string{"from": string(before.Status), "to": string(to), "reason": reason})
		if err != nil {
			return err
		}
		if err := tx.InsertAdminAudit(ctx, AuditEntry{
			ID: ids.New("aud"), Actor: ActorAdmin, Action: "app." + string(action), Subject: appID, Detail: detail, At: a.UpdatedAt,
		}); err != nil {
			return err
		}
		h, err := tx.AppStatusHistory(ctx, appID)
		view = AppView{App: a, History: h}
		return err
	})
	if err == nil && s.StatusChanged != nil {
		// After the commit of the request's unit (an Idempotency-Key
		// request commits with its stored answer), at once otherwise.
		txunit.AfterCommit(ctx, func() { s.StatusChanged(appID) })
	}
	return view, err
}

// AppView returns the app and its status history.
func (s *Service) AppView(ctx context.Context, appID string) (AppView, error) {
	var view AppView
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		a, ok, err := tx.GetApp(ctx, appID, false)
		if err != nil {
			return err
		}
		if !ok {
			return notFound()
		}
		h, err := tx.AppStatusHistory(ctx, appID)
		view = AppView{App: a, History: h}
		return err
	})
	return view, err
}

// Audit limits.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// Audit returns a page of the operator audit log, newest first.
func (s *Service) Audit(ctx context.Context, q AuditQuery) (AuditPage, error) {
	if q.Limit < 1 || q.Limit > MaxAuditLimit {
		e := apperr.New(apperr.InvalidLimit, "limit must be an integer from 1 to %d", MaxAuditLimit)
		e.Field = "limit"
		return AuditPage{}, e
	}
	var out AuditPage
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		list, err := tx.AuditPage(ctx, q.After, q.Limit+1)
		out.Entries, out.Next = cursor.Cut(list, q.Limit, func(e AuditEntry) cursor.Position {
			return cursor.Position{CreatedAt: e.At, ID: e.ID}
		})
		return err
	})
	return out, err
}
