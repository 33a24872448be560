package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/outbox"
)

// Suspension is an app's current suspension: the history row that
// suspended it.
type Suspension struct {
	AppID  string
	Reason string
	Actor  string
	At     time.Time
}

// Clawback records that a chain's clearing was clawed back.
type Clawback struct {
	ChainID string
	AppID   string // the publisher, whose earnings went back
	Reason  string // the suspension's reason
	At      time.Time
}

// Tx is what the lifecycle needs from a transaction: the status machine
// (apps), the ledger's primitives (a clawback commits with its record), the
// outbox, and its own queries.
type Tx interface {
	apps.Tx
	ledger.Tx
	outbox.Writer

	// ReviewSignals returns the Signals of every app whose status is one of
	// Reviewed, counting claims and installs from since and upheld
	// complaints resolved from complaintsSince (each from the app's last
	// reinstatement instead, when later), in app id order.
	ReviewSignals(ctx context.Context, since, complaintsSince time.Time) ([]Signals, error)
	// AppSignals returns the Signals of one app, whatever its status,
	// counted as ReviewSignals counts them (the same query), with its
	// CanaryClicks; an app with no row has zero signals.
	AppSignals(ctx context.Context, appID string, since, complaintsSince time.Time) (Signals, error)
	// HoldReader reads the escrow holds the go-live bar is judged on
	// (market.LiveHoldStats).
	market.HoldReader
	// UpheldComplaints counts the upheld complaints about the app resolved
	// at or after since and after its last reinstatement.
	UpheldComplaints(ctx context.Context, appID string, since time.Time) (int64, error)
	// CanaryClicks counts, for each app with any, the canary clicks
	// recorded since its last reinstatement (Signals.CanaryClicks).
	CanaryClicks(ctx context.Context) (map[string]int64, error)
	// Suspensions returns, for every app suspended now, the history row
	// that suspended it (its last move to suspended), in app id order.
	Suspensions(ctx context.Context) ([]Suspension, error)
	// ClawbackCandidates returns up to limit chains of the publisher app in
	// state cleared, resolved at or after since and not clawed back yet,
	// oldest resolution first.
	ClawbackCandidates(ctx context.Context, publisherAppID string, since time.Time, limit int) ([]attribution.Chain, error)
	// InsertClawback records a clawback; it writes nothing and returns
	// false when the chain has one already.
	InsertClawback(ctx context.Context, c Clawback) (inserted bool, err error)
}

// Service runs the lifecycle review.
type Service struct {
	Update func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	View   func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	Now    func() time.Time
	Apps   *apps.Service
	Rules  Rules
	Log    *slog.Logger
	// StatusChanged is called after the commit of each suspension or
	// reinstatement the review makes (the server drops its cached record of
	// the app and invalidates delivery, so the app's fills and campaigns
	// stop, or start again, at once); nil: nothing.
	StatusChanged func(appID string)
}

// ClawbackBatch is how many candidate chains one read of the clawback
// phase loads (each is then clawed back in a transaction of its own).
const ClawbackBatch = 200

// Result counts what a review did.
type Result struct {
	Suspended  []string // the apps suspended, in app id order
	Reinstated []string // the apps reinstated by a clean review, in app id order
	ClawedBack int      // chains clawed back
	Refunded   int64    // cents refunded to advertisers by those clawbacks
	Failed     int      // chains whose clawback failed (logged; retried by the next review)
}

func (s *Service) now() time.Time { return s.Now().UTC() }

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Review runs one lifecycle review: it suspends every approved, throttled
// or live app whose signals cross the bar (Rules.Verdict), each in its own
// transaction with its history row and score.updated; reinstates every app
// it suspended for complaints whose upheld complaints in the window fell
// below the bar (Rules.Cleared); then claws back the cleared chains of every
// app suspended for fraud (apps.FraudSuspensions: by the review, or by an
// operator with reason "fraud"), one transaction per chain. Running it
// again changes nothing more; a review cut short is finished by the next.
func (s *Service) Review(ctx context.Context) (Result, error) {
	var res Result
	r := s.Rules.WithDefaults()
	now := s.now()
	var signals []Signals
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		signals, err = tx.ReviewSignals(ctx, now.Add(-r.FraudWindow), now.Add(-r.ComplaintsWindow))
		if err != nil {
			return err
		}
		canaries, err := tx.CanaryClicks(ctx)
		for i := range signals {
			signals[i].CanaryClicks = canaries[signals[i].AppID]
		}
		return err
	})
	if err != nil {
		return res, err
	}
	for _, sig := range signals {
		v := r.Verdict(sig)
		if !v.Suspend {
			continue
		}
		suspended, err := s.suspend(ctx, sig.AppID, v)
		if err != nil {
			return res, err
		}
		if suspended {
			res.Suspended = append(res.Suspended, sig.AppID)
			s.log().Warn("app suspended by the lifecycle review", "app_id", sig.AppID, "reason", v.Reason,
				"claims", sig.Claims, "fraud_rejected", sig.FraudRejected, "decided", sig.Decided,
				"retained", sig.Retained, "upheld_complaints", sig.Upheld, "canary_clicks", sig.CanaryClicks)
		}
	}
	sus, err := s.suspensions(ctx)
	if err != nil {
		return res, err
	}
	for _, su := range sus {
		if su.Reason != ReasonComplaints || su.Actor != apps.ActorSystem {
			continue
		}
		reinstated, err := s.reinstate(ctx, su, now.Add(-r.ComplaintsWindow), r)
		if err != nil {
			return res, err
		}
		if reinstated {
			res.Reinstated = append(res.Reinstated, su.AppID)
			s.log().Info("app reinstated by a clean lifecycle review", "app_id", su.AppID)
		}
	}
	for _, su := range sus {
		if !ClawsBack(su.Reason) {
			continue
		}
		if err := s.clawbackApp(ctx, su, r, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// suspend moves the app to suspended, if its status is still one the review
// judges (an operator may have moved it since the signals were read).
func (s *Service) suspend(ctx context.Context, appID string, v Verdict) (bool, error) {
	var moved bool
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		moved = false
		a, ok, err := tx.GetApp(ctx, appID, true)
		if err != nil || !ok || !slices.Contains(Reviewed, a.Status) {
			return err
		}
		if _, err := s.Apps.Transition(ctx, tx, appID, xpromo.AppStatusSuspended, v.Reason, v.Actor); err != nil {
			return err
		}
		moved = true
		return nil
	})
	if err == nil && moved && s.StatusChanged != nil {
		s.StatusChanged(appID) // committed: the review runs outside any unit of work
	}
	return moved, err
}

func (s *Service) suspensions(ctx context.Context) ([]Suspension, error) {
	var sus []Suspension
	err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		sus, err = tx.Suspensions(ctx)
		return err
	})
	return sus, err
}

// reinstate lifts a suspension the review made for complaints once the
// upheld complaints resolved from complaintsSince (and since the app's last
// reinstatement) no longer reach the bar: back to the status before it,
// actor system, reason clean_review. In its transaction it checks that the
// app is still under that very suspension (an operator may have reinstated
// it, or suspended it again for another reason, since it was read).
func (s *Service) reinstate(ctx context.Context, su Suspension, complaintsSince time.Time, r Rules) (bool, error) {
	var moved bool
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		moved = false
		a, ok, err := tx.GetApp(ctx, su.AppID, true)
		if err != nil || !ok || a.Status != xpromo.AppStatusSuspended {
			return err
		}
		h, err := tx.AppStatusHistory(ctx, su.AppID)
		if err != nil || len(h) == 0 {
			return err
		}
		last := h[len(h)-1]
		if last.To != xpromo.AppStatusSuspended || last.Reason != ReasonComplaints || last.Actor != apps.ActorSystem {
			return nil
		}
		upheld, err := tx.UpheldComplaints(ctx, su.AppID, complaintsSince)
		if err != nil || !r.Cleared(upheld) {
			return err
		}
		if _, err := s.Apps.Reinstate(ctx, tx, su.AppID, ReasonCleanReview, apps.ActorSystem); err != nil {
			return err
		}
		moved = true
		return nil
	})
	if err == nil && moved && s.StatusChanged != nil {
		s.StatusChanged(su.AppID)
	}
	return moved, err
}

// clawbackApp claws back, batch after batch, the chains of an app
// suspended for fraud that cleared from ClawbackWindow before its
// suspension on.
func (s *Service) clawbackApp(ctx context.Context, su Suspension, r Rules, res *Result) error {
	since := su.At.Add(-r.ClawbackWindow)
	for {
		var chains []attribution.Chain
		err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
			chains, err = tx.ClawbackCandidates(ctx, su.AppID, since, ClawbackBatch)
			return err
		})
		if err != nil {
			return err
		}
		failed := 0
		for _, c := range chains {
			done, err := s.clawback(ctx, c, su)
			switch {
			case err != nil && ctx.Err() != nil:
				return err
			case err != nil:
				// One chain's failure must not hold back the others; it
				// stays a candidate for the next review.
				failed++
				s.log().Error("clawback failed; the next review tries again", "chain_id", c.ID, "app_id", su.AppID, "error", err.Error())
			case done:
				res.ClawedBack++
				res.Refunded += c.PriceCents
			}
		}
		res.Failed += failed
		if len(chains) < ClawbackBatch || failed > 0 {
			return nil
		}
	}
}

// ClawbackKey is the ledger key of a chain's clawback: derived from the
// chain, so that a retried or repeated review never moves its money twice.
func ClawbackKey(chainID string) string { return "clawback:" + chainID }

// clawback reverses one cleared chain in one transaction: the clawback
// record (at most one per chain), the ledger's clawback operation (the
// publisher's earnings back, in the earn mode they were paid in; the
// advertiser refunded as an adjustment; the platform's take and bonus
// returned) and fraud.flagged to both apps. It reports false when the chain
// was clawed back already (another reviewer was first).
func (s *Service) clawback(ctx context.Context, c attribution.Chain, su Suspension) (bool, error) {
	var done bool
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		done = false
		now := s.now()
		inserted, err := tx.InsertClawback(ctx, Clawback{ChainID: c.ID, AppID: c.PublisherAppID, Reason: su.Reason, At: now})
		if err != nil || !inserted {
			return err
		}
		mode, err := clearedEarnMode(ctx, tx, c)
		if err != nil {
			return err
		}
		h := ledger.Hold{ID: c.HoldID(), Advertiser: c.AdvertiserAppID, Publisher: c.PublisherAppID, Amount: c.PriceCents, ChainID: c.ID}
		op, err := ledger.Clawback(ClawbackKey(c.ID), h, mode, "publisher suspended: "+su.Reason)
		if err != nil {
			return err
		}
		_, errs, err := ledger.Apply(ctx, tx, now, []ledger.Operation{op})
		if err != nil {
			return err
		}
		if errs[0] != nil {
			return errs[0]
		}
		if err := tx.InsertOutbox(ctx, flagged(c, now)); err != nil {
			return err
		}
		done = true
		return nil
	})
	return done, err
}

// clearedEarnMode is the earn mode the chain's clearing paid the publisher
// in (its earn line), which the clawback must reverse whatever the app's
// mode is now.
func clearedEarnMode(ctx context.Context, tx Tx, c attribution.Chain) (ledger.EarnMode, error) {
	key := attribution.ClearKey(c.ID)
	ops, err := tx.FindOperations(ctx, []string{key})
	if err != nil {
		return "", err
	}
	op, ok := ops[key]
	if !ok {
		return "", fmt.Errorf("lifecycle: chain %s is cleared but has no clearing operation %q", c.ID, key)
	}
	lines, err := tx.OperationLines(ctx, []string{op.ID})
	if err != nil {
		return "", err
	}
	for _, l := range lines[op.ID] {
		if l.Type == ledger.TypeEarn && l.Account == ledger.Wallet(c.PublisherAppID) {
			return l.EarnMode, nil
		}
	}
	return "", fmt.Errorf("lifecycle: the clearing of chain %s has no earn line", c.ID)
}

// flagged is fraud.flagged for a clawed-back chain, to its publisher and
// its advertiser: reason fraud_clawed_back, the chain (still cleared: the
// clawback is in the ledger, not in the chain's state).
func flagged(c attribution.Chain, now time.Time) []outbox.Event {
	prev := xpromo.ChainState(c.State)
	data := xpromo.FraudEventData{Reason: xpromo.FraudClawedBack, Chain: attribution.Wire(c), PreviousState: &prev}
	var out []outbox.Event
	for _, app := range []string{c.PublisherAppID, c.AdvertiserAppID} {
		out = append(out, outbox.New(app, xpromo.EventFraudFlagged, data, now))
	}
	return out
}
