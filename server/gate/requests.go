package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/rdap"
)

// The operations behind the gate's endpoints (docs/gate.md): a re-check
// asked by the app, and the contact challenge's answers and resends.

// Recheck queues the gate again for an app the gate rejected: in one
// transaction the app goes back to pending and a gate job is queued, which
// it returns. A pending app with a gate job queued or running gets that job;
// a pending app without one (its last gate job failed) gets a new one. An
// app an operator decided, or one already approved, is refused
// (gate_recheck_refused), and so is an app rejected for its domain's age
// before that domain is eligible (gate_domain_too_young, retry_after).
func (s *Service) Recheck(ctx context.Context, appID string) (apps.Job, error) {
	var job apps.Job
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		a, ok, err := tx.GetApp(ctx, appID, true)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		js, err := tx.AppJobs(ctx, appID)
		if err != nil {
			return err
		}
		switch a.Status {
		case xpromo.AppStatusPending:
			for i := len(js) - 1; i >= 0; i-- {
				if j := js[i]; j.Kind == xpromo.JobGate && (j.Status == xpromo.JobQueued || j.Status == xpromo.JobRunning) {
					job = j
					return nil
				}
			}
			if job, err = s.queueJob(ctx, tx, appID, s.now()); err != nil {
				return err
			}
			return s.Apps.ScoreUpdated(ctx, tx, appID)
		case xpromo.AppStatusRejected:
		default:
			return apperr.New(apperr.GateRecheckRefused, "the app is %s: only an app the gate rejected (or a pending one) can be re-checked", a.Status)
		}
		h, err := tx.AppStatusHistory(ctx, appID)
		if err != nil {
			return err
		}
		last := h[len(h)-1]
		if last.Actor != apps.ActorGate {
			return apperr.New(apperr.GateRecheckRefused, "an operator rejected the app; only an operator can send it back to review")
		}
		if last.Reason == rdap.ReasonDomainTooYoung {
			if at := eligibleAt(js); at != nil && s.now().Before(*at) {
				e := apperr.New(apperr.GateDomainTooYoung, "the domain becomes old enough on %s; the gate checks again then by itself", at.Format(time.RFC3339))
				e.RetryAfter = at
				return e
			}
		}
		if job, err = s.queueJob(ctx, tx, appID, s.now()); err != nil {
			return err
		}
		_, err = s.Apps.Transition(ctx, tx, appID, xpromo.AppStatusPending, HistoryRecheck, apps.ActorGate)
		return err
	})
	return job, err
}

// eligibleAt is the retry_after of the app's latest gate result, if any.
func eligibleAt(js []apps.Job) *time.Time {
	for i := len(js) - 1; i >= 0; i-- {
		if j := js[i]; j.Kind == xpromo.JobGate && j.Result != nil {
			var r apps.GateResult
			if json.Unmarshal(j.Result, &r) != nil {
				return nil
			}
			return r.RetryAfter
		}
	}
	return nil
}

// ErrContactUnavailable: the server has no contact challenge service.
var errContactUnavailable = apperr.New(apperr.Unavailable, "contact verification is not configured on this server")

// VerifyToken answers a challenge's link token (the public verification
// page's POST, and the test-mode sandbox's inbox through Follow). On
// success a gate job is queued to run now for a pending app, so the gate
// decides without waiting for the challenge's expiry.
func (s *Service) VerifyToken(ctx context.Context, token string) (contact.Verification, error) {
	if s.Contact == nil {
		return contact.Verification{}, errContactUnavailable
	}
	v, err := s.Contact.VerifyToken(ctx, token)
	if err != nil || v.Status != contact.StatusOK {
		return v, err
	}
	return v, s.verified(ctx, v.Subject)
}

// Follow verifies the token of a challenge link in-process, as a browser's
// POST would: the follow function the test-mode sandbox's inbox calls.
func (s *Service) Follow(ctx context.Context, link string) error {
	u, err := url.Parse(link)
	if err != nil {
		return fmt.Errorf("gate: the challenge link does not parse: %w", err)
	}
	v, err := s.VerifyToken(ctx, u.Query().Get("token"))
	if err != nil {
		return err
	}
	if v.Status != contact.StatusOK {
		return fmt.Errorf("gate: the challenge link answered %s", v.Status)
	}
	return nil
}

// VerifyCode answers the 6-digit code of the app's newest challenge. A
// code that does not verify is an *apperr.Error: contact_code_invalid (with
// the attempts left in the message), contact_code_locked,
// contact_challenge_expired, contact_challenge_used or
// contact_no_challenge.
func (s *Service) VerifyCode(ctx context.Context, appID, code string) (contact.Verification, error) {
	if s.Contact == nil {
		return contact.Verification{}, errContactUnavailable
	}
	v, err := s.Contact.VerifyCode(ctx, appID, code)
	if err != nil {
		return v, err
	}
	switch v.Status {
	case contact.StatusOK:
		return v, s.verified(ctx, appID)
	case contact.StatusExpired:
		return v, apperr.New(apperr.ContactChallengeExpired, "the challenge expired; ask for a new one with POST /v1/apps/%s/contact/resend", appID)
	case contact.StatusUsed:
		return v, apperr.New(apperr.ContactChallengeUsed, "the challenge was already answered")
	case contact.StatusLocked:
		return v, apperr.New(apperr.ContactCodeLocked, "too many wrong codes for this challenge: open the link in the email, or ask for a new challenge")
	}
	if v.ChallengeID == "" {
		return v, apperr.New(apperr.ContactNoChallenge, "no challenge was sent for this app yet")
	}
	e := apperr.New(apperr.ContactCodeInvalid, "the code is wrong; %d attempts left", v.AttemptsLeft)
	e.Field = "code"
	return v, e
}

// Resend mails the app a new challenge, superseding the previous one.
// Refused with contact_already_verified when the current address has
// answered, and with 429 contact_resend_too_soon (retry_after) within the
// contact limits (one a minute, five a day).
func (s *Service) Resend(ctx context.Context, appID string) (email string, expires time.Time, err error) {
	sent, email, err := s.resend(ctx, appID)
	return email, sent.ExpiresAt, err
}

func (s *Service) resend(ctx context.Context, appID string) (contact.Sent, string, error) {
	if s.Contact == nil || s.Challenges == nil {
		return contact.Sent{}, "", errContactUnavailable
	}
	var app apps.App
	if err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		a, ok, err := tx.GetApp(ctx, appID, false)
		if !ok && err == nil {
			err = apperr.New(apperr.NotFound, "app not found")
		}
		app = a
		return err
	}); err != nil {
		return contact.Sent{}, "", err
	}
	c, err := s.Challenges.LatestChallenge(ctx, appID)
	if err == nil && c.Email == app.ContactEmail && !c.UsedAt.IsZero() {
		return contact.Sent{}, "", apperr.New(apperr.ContactAlreadyVerified, "the contact address %s is already verified", app.ContactEmail)
	}
	if err != nil && !errors.Is(err, contact.ErrNotFound) {
		return contact.Sent{}, "", err
	}
	sent, err := s.Contact.Send(ctx, contact.Request{Subject: app.ID, Email: app.ContactEmail, AppName: app.Name})
	var limit *contact.LimitError
	switch {
	case err == nil:
		return sent, app.ContactEmail, nil
	case errors.As(err, &limit):
		e := apperr.New(apperr.ContactResendTooSoon, "a challenge was sent recently; the next can go at %s", limit.RetryAfter.UTC().Format(time.RFC3339))
		at := limit.RetryAfter.UTC()
		e.RetryAfter = &at
		return sent, "", e
	case contact.ReasonFor(err) == contact.ReasonContactUndeliverable:
		return sent, "", apperr.New(apperr.ContactUndeliverable, "the contact address cannot receive mail: %v", err)
	case contact.ReasonFor(err) == contact.ReasonMailUnavailable:
		return sent, "", apperr.New(apperr.Unavailable, "the challenge could not be mailed now; try again later")
	}
	return sent, "", err
}

// verified follows a successful answer: a pending app's gate runs again
// now (in its own transaction: the answer is already recorded, and if this
// fails the job queued at the challenge's expiry still finds it answered).
// That job is the one brought forward (apps.QueueJobSoon): none is left queued
// at the expiry to run the checks again on a decided app.
func (s *Service) verified(ctx context.Context, appID string) error {
	return s.Update(ctx, func(ctx context.Context, tx Tx) error {
		a, ok, err := tx.GetApp(ctx, appID, true)
		if err != nil || !ok || a.Status != xpromo.AppStatusPending {
			return err
		}
		if _, err := apps.QueueJobSoon(ctx, tx, appID, xpromo.JobGate, s.now(), s.now()); err != nil {
			return err
		}
		return s.Apps.ScoreUpdated(ctx, tx, appID)
	})
}
