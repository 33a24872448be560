package apps

import (
	"context"
	"encoding/json"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
)

// An app's team reads its own app (GET /v1/apps/{app_id}) and changes the
// one field of its registration that no check vouched for: the appcast URL
// (PATCH /v1/apps/{app_id}, docs/apps.md "Reading and changing the app").

// ActorApp is the actor of an audit entry written by the app's own key.
const ActorApp = "app"

// AuditAppcastURL is the action of the audit entry of a changed appcast URL.
const AuditAppcastURL = "app.appcast_url"

// RescoreGap is how long after the app's last scoring run ended the run a
// changed appcast URL brings forward may start: at once for a team fixing
// its feed, but a team changing its URL over and over cannot make the
// server read the model endpoint and feeds for it more than once a minute.
const RescoreGap = time.Minute

// FixedFields are the registration fields a team cannot change after
// registering: the vetting gate vouched for the first six together (the
// domain's age, the download serving the bundle id, the contact answering
// its challenge; coherence reads name, domain, bundle id, download host and
// contact domain as one), and the category decides which inventory the
// app's slots sell. A new value is a new registration, vetted afresh.
var FixedFields = []string{"name", "platform", "bundle_id", "domain", "download_url", "contact_email", "category"}

// NotChangeable is the refusal of a change to one of FixedFields.
func NotChangeable(field string) error {
	return fieldErr(apperr.FieldNotChangeable, field,
		"%s is set at registration only (the vetting gate vouched for the app as registered): register the app again with the new value; only appcast_url can be changed here", field)
}

// App returns the app as registered, for its own team.
func (s *Service) App(ctx context.Context, appID string) (App, error) {
	var a App
	err := s.View(ctx, func(ctx context.Context, tx Tx) error {
		var ok bool
		var err error
		if a, ok, err = tx.GetApp(ctx, appID, false); err == nil && !ok {
			err = notFound()
		}
		return err
	})
	return a, err
}

// UpdateAppcastURL sets the app's appcast URL (nil clears it), checked as
// at registration (invalid_appcast_url). A change commits in one
// transaction with its audit entry (actor app) and a scoring run due at
// once, or RescoreGap after the last one ended (QueueJobSoon: the queued
// run is brought forward, never doubled), so the cadence signal is read
// again from the new feed; that job is returned.
// The URL the app already has changes nothing and returns no job. Any
// status may change it: a suspended or rejected app is still scored, and
// its team may be fixing exactly this.
func (s *Service) UpdateAppcastURL(ctx context.Context, appID string, url *string) (App, *Job, error) {
	next := ""
	if url != nil {
		var err error
		if next, err = checkAppcastURL(*url); err != nil {
			return App{}, nil, err
		}
	}
	var a App
	var job *Job
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		// Locked: a concurrent change waits, so the audit's "from" is the
		// value this one replaces.
		if a, err = lockApp(ctx, tx, appID); err != nil {
			return err
		}
		job = nil // a retried transaction starts over
		if a.AppcastURL == next {
			return nil
		}
		now := s.now()
		if err := tx.SetAppAppcastURL(ctx, appID, next, now); err != nil {
			return err
		}
		detail, err := json.Marshal(map[string]*string{"from": orNull(a.AppcastURL), "to": orNull(next)})
		if err != nil {
			return err
		}
		if err := tx.InsertAdminAudit(ctx, AuditEntry{
			ID: ids.New("aud"), Actor: ActorApp, Action: AuditAppcastURL, Subject: appID, Detail: detail, At: now,
		}); err != nil {
			return err
		}
		runAfter, err := rescoreAt(ctx, tx, appID, now)
		if err != nil {
			return err
		}
		j, err := QueueJobSoon(ctx, tx, appID, xpromo.JobScoring, runAfter, now)
		if err != nil {
			return err
		}
		a.AppcastURL, a.UpdatedAt, job = next, now, &j
		return nil
	})
	if err != nil {
		return App{}, nil, err
	}
	return a, job, nil
}

// rescoreAt is when the scoring run a change brings forward may start: now,
// or RescoreGap after the app's last scoring run finished.
func rescoreAt(ctx context.Context, tx Tx, appID string, now time.Time) (time.Time, error) {
	js, err := tx.AppJobs(ctx, appID)
	if err != nil {
		return time.Time{}, err
	}
	at := now
	for _, j := range js {
		if j.Kind == xpromo.JobScoring && j.FinishedAt != nil && j.FinishedAt.Add(RescoreGap).After(at) {
			at = j.FinishedAt.Add(RescoreGap)
		}
	}
	return at, nil
}

// orNull is s, or nil when s is empty.
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
