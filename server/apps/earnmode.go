package apps

import (
	"context"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
)

// EarnModeChange is a row of an app's append-only earn mode history.
type EarnModeChange struct {
	AppID    string
	From, To ledger.EarnMode
	At       time.Time
}

// EarnModeState is an app's earn mode and since when it applies.
type EarnModeState struct {
	AppID string
	Mode  ledger.EarnMode
	// Since is when the mode took effect: the last switch, or the app's
	// registration when it never switched.
	Since time.Time
}

// EarnModeTx is what choosing an earn mode needs from a transaction (part
// of Tx).
type EarnModeTx interface {
	SetAppEarnMode(ctx context.Context, id string, mode ledger.EarnMode, at time.Time) error
	InsertEarnModeChange(ctx context.Context, c EarnModeChange) error
	// LastEarnModeChange returns the app's latest earn mode change; ok is
	// false when it never switched.
	LastEarnModeChange(ctx context.Context, appID string) (c EarnModeChange, ok bool, err error)
}

// EarnMode returns the app's earn mode and since when it applies.
func (s *Service) EarnMode(ctx context.Context, appID string) (EarnModeState, error) {
	var st EarnModeState
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		a, ok, err := tx.GetApp(ctx, appID, false)
		if err != nil {
			return err
		}
		if !ok {
			return notFound()
		}
		st, err = earnModeState(ctx, tx, a)
		return err
	})
	return st, err
}

// SetEarnMode switches how the app takes the earnings of the chains that
// clear from now on (decisions §3): cash, withdrawable, or credits, ×1.2,
// spendable on campaigns and never withdrawable. The mode is read when a
// chain clears, so it applies to every chain not yet cleared; earnings
// already cleared keep the mode their ledger line carries. Choosing the mode
// the app already has changes nothing (and answers when it took effect).
// A suspended or rejected app cannot switch (earn_mode_not_allowed).
func (s *Service) SetEarnMode(ctx context.Context, appID, mode string) (EarnModeState, error) {
	m := ledger.EarnMode(mode)
	switch {
	case mode == "":
		e := apperr.New(apperr.MissingField, "earn_mode is required: cash or credits")
		e.Field = "earn_mode"
		return EarnModeState{}, e
	case m != ledger.EarnCash && m != ledger.EarnCredits:
		e := apperr.New(apperr.InvalidEarnMode, "earn_mode must be cash or credits")
		e.Field = "earn_mode"
		return EarnModeState{}, e
	}
	var st EarnModeState
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		// Locked: a concurrent switch or status change waits, so the check
		// below holds until this commits.
		a, err := lockApp(ctx, tx, appID)
		if err != nil {
			return err
		}
		if a.Status == xpromo.AppStatusSuspended || a.Status == xpromo.AppStatusRejected {
			return apperr.New(apperr.EarnModeNotAllowed, "the app is %s; it cannot change its earn mode", a.Status)
		}
		if a.EarnMode != m {
			now := s.now()
			if err := tx.SetAppEarnMode(ctx, appID, m, now); err != nil {
				return err
			}
			if err := tx.InsertEarnModeChange(ctx, EarnModeChange{AppID: appID, From: a.EarnMode, To: m, At: now}); err != nil {
				return err
			}
			a.EarnMode = m
		}
		st, err = earnModeState(ctx, tx, a)
		return err
	})
	return st, err
}

func earnModeState(ctx context.Context, tx Tx, a App) (EarnModeState, error) {
	st := EarnModeState{AppID: a.ID, Mode: a.EarnMode, Since: a.CreatedAt}
	c, ok, err := tx.LastEarnModeChange(ctx, a.ID)
	if err != nil {
		return EarnModeState{}, err
	}
	if ok {
		st.Since = c.At
	}
	return st, nil
}
