// Package apps registers apps, issues and checks their API keys, keeps their
// status and its history, and records the jobs (scoring, vetting gate) queued
// for them.
//
// docs/apps.md describes the rules (fields and their codes, key format and
// rotation, status transitions, the admin surface, the score).
package apps

import (
	"context"
	"encoding/json"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
)

// App is a registered app.
type App struct {
	ID           string
	Name         string
	Platform     xpromo.Platform
	BundleID     string
	Domain       string
	DownloadURL  string
	ContactEmail string
	Category     string // "" when none was given
	Status       xpromo.AppStatus
	EarnMode     ledger.EarnMode
	CreatedAt    time.Time
	UpdatedAt    time.Time

	// AppcastURL is the app's Sparkle-format appcast as registered ("" when
	// none was given): the cadence source of a Windows app, and of a Mac app
	// whose bundle declares no SUFeedURL (docs/reputation.md).
	AppcastURL string
}

// APIKey is a stored API key: only the SHA-256 of the key, never the key.
type APIKey struct {
	Hash      string // hex SHA-256 of the whole key
	AppID     string
	Prefix    string // the key's first 12 characters, for display
	CreatedAt time.Time
	ExpiresAt *time.Time // nil: no expiry
}

// Job is a unit of background work queued for an app. The job runner
// (server/jobs) claims queued jobs whose RunAfter has passed, runs them and
// records a JSON Result.
type Job struct {
	ID         string
	AppID      string
	Kind       xpromo.JobKind
	Status     xpromo.JobStatus
	Result     json.RawMessage // nil until a worker records one
	CreatedAt  time.Time
	RunAfter   time.Time
	FinishedAt *time.Time

	// Attempts counts the times a runner claimed the job.
	Attempts int
	// Holder and LockedUntil are the lease of a running job: the runner
	// that claimed it, and until when. Empty and nil otherwise.
	Holder      string
	LockedUntil *time.Time
	// LastError is the stable code of the last failed attempt ("" when
	// none), LastErrorMessage what the app's owner may read about it.
	LastError, LastErrorMessage string
}

// StatusChange is a row of an app's append-only status history.
type StatusChange struct {
	AppID  string
	From   xpromo.AppStatus // "" on the registration row
	To     xpromo.AppStatus
	Reason string
	Actor  string
	At     time.Time
}

// AuditEntry is a row of the append-only operator audit log.
type AuditEntry struct {
	ID      string
	Actor   string
	Action  string
	Subject string
	Detail  json.RawMessage // a JSON object
	At      time.Time
}

// Actors of status changes.
const (
	ActorAdmin  = "admin"  // an operator, through the admin surface
	ActorSystem = "system" // the server itself (registration)
	ActorGate   = "gate"   // the vetting gate
	ActorFraud  = "fraud"  // fraud detection
	ActorMarket = "market" // trading progress (throttled, live)
)

// Tx is what the apps domain needs from a transaction.
type Tx interface {
	// Writer appends score.updated events to the outbox.
	outbox.Writer
	EarnModeTx

	InsertApp(ctx context.Context, a App) error
	// GetApp returns the app with this id; ok is false when there is none.
	// With lock, the row stays locked until the transaction ends.
	GetApp(ctx context.Context, id string, lock bool) (a App, ok bool, err error)
	SetAppStatus(ctx context.Context, id string, status xpromo.AppStatus, at time.Time) error
	// SetAppAppcastURL sets the app's appcast URL ("" for none) and its
	// updated_at.
	SetAppAppcastURL(ctx context.Context, id, url string, at time.Time) error
	InsertAppStatusChange(ctx context.Context, c StatusChange) error
	// AppStatusHistory returns the app's status changes, oldest first.
	AppStatusHistory(ctx context.Context, appID string) ([]StatusChange, error)

	InsertAPIKey(ctx context.Context, k APIKey) error
	// APIKeyByHash looks a key up by its hash (the primary key).
	APIKeyByHash(ctx context.Context, hash string) (k APIKey, ok bool, err error)
	// ExpireAppAPIKeys sets expires_at = at on every key of the app that
	// would otherwise still be valid at that time.
	ExpireAppAPIKeys(ctx context.Context, appID string, at time.Time) error

	InsertJob(ctx context.Context, j Job) error
	// AppJobs returns the app's jobs, oldest first.
	AppJobs(ctx context.Context, appID string) ([]Job, error)
	// RescheduleJob sets the run_after of a queued job; it writes nothing
	// and returns false when the job is no longer queued (a runner claimed
	// it).
	RescheduleJob(ctx context.Context, jobID string, runAfter time.Time) (bool, error)

	InsertAdminAudit(ctx context.Context, e AuditEntry) error

	ListTx
}

// Service is the apps domain's entry point; its fields are its dependencies.
type Service struct {
	// Update runs fn in a read-write transaction (retried on conflicts).
	Update func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// View runs fn in a read-only snapshot.
	View func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Now is the clock.
	Now func() time.Time
	// Live makes the service issue and accept xp_live_ keys; otherwise
	// (test mode) xp_test_ keys.
	Live bool
	// StatusChanged is called once an operator's action (Act) has
	// committed, with the app whose status it changed: the server drops
	// its cached record of the app and re-reads delivery, so that a
	// suspension stops the app's fills and campaigns on this instance at
	// once, as the lifecycle review's does. nil: nothing.
	StatusChanged func(appID string)
}

// now is the clock at the precision both stores keep (microseconds), so a
// value returned equals the value read back.
func (s *Service) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// RegisterParams are the fields of a registration (RegisterAppRequest).
type RegisterParams struct {
	Name         string
	Platform     string
	BundleID     string
	Domain       string
	DownloadURL  string
	ContactEmail string
	Category     string // optional
	AppcastURL   string // optional
}

// ReviewDelay is how long after registration the next review is announced
// when no job is queued.
const ReviewDelay = 24 * time.Hour

// Register validates p and, in one transaction, records the app (pending),
// its API key, the first status-history row, two queued jobs, scoring and
// gate, and its first score.updated. It returns the app, the API key (the only time it exists outside the
// caller) and the scoring job.
func (s *Service) Register(ctx context.Context, p RegisterParams) (App, string, Job, error) {
	p, err := validate(p)
	if err != nil {
		return App{}, "", Job{}, err
	}
	now := s.now()
	app := App{
		ID: ids.New("app"), Name: p.Name, Platform: xpromo.Platform(p.Platform), BundleID: p.BundleID,
		Domain: p.Domain, DownloadURL: p.DownloadURL, ContactEmail: p.ContactEmail, Category: p.Category,
		AppcastURL: p.AppcastURL, Status: xpromo.AppStatusPending, EarnMode: ledger.EarnCash, CreatedAt: now, UpdatedAt: now,
	}
	key := s.newKey()
	scoring, gate := newJob(app.ID, xpromo.JobScoring, now), newJob(app.ID, xpromo.JobGate, now)
	err = s.Update(ctx, func(ctx context.Context, tx Tx) error {
		if err := tx.InsertApp(ctx, app); err != nil {
			return err
		}
		if err := tx.InsertAPIKey(ctx, APIKey{Hash: HashKey(key), AppID: app.ID, Prefix: key[:displayPrefixLen], CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.InsertAppStatusChange(ctx, StatusChange{AppID: app.ID, To: xpromo.AppStatusPending, Reason: "registered", Actor: ActorSystem, At: now}); err != nil {
			return err
		}
		if err := tx.InsertJob(ctx, scoring); err != nil {
			return err
		}
		if err := tx.InsertJob(ctx, gate); err != nil {
			return err
		}
		return s.scoreUpdated(ctx, tx, app.ID)
	})
	if err != nil {
		return App{}, "", Job{}, err
	}
	return app, key, scoring, nil
}

// NewJob returns a job of kind for appID, queued to run at now (other
// domains queue follow-up jobs with it, changing RunAfter).
func NewJob(appID string, kind xpromo.JobKind, now time.Time) Job { return newJob(appID, kind, now) }

// QueueJob queues, inside tx, a job of kind for appID to run at runAfter
// (now if that has passed), unless one of that kind is already queued to
// run by then: that one is returned instead. The gate's re-checks and
// follow-ups and the scoring job's next review all queue through it, so an
// app never piles up duplicate jobs.
func QueueJob(ctx context.Context, tx Tx, appID string, kind xpromo.JobKind, runAfter, now time.Time) (Job, error) {
	js, err := tx.AppJobs(ctx, appID)
	if err != nil {
		return Job{}, err
	}
	for i := len(js) - 1; i >= 0; i-- {
		if j := js[i]; j.Kind == kind && j.Status == xpromo.JobQueued && !j.RunAfter.After(runAfter) {
			return j, nil
		}
	}
	if runAfter.Before(now) {
		runAfter = now
	}
	j := newJob(appID, kind, now)
	j.RunAfter = runAfter.UTC().Truncate(time.Microsecond)
	return j, tx.InsertJob(ctx, j)
}

// QueueJobSoon makes, inside tx, the app's next job of kind run no later
// than runAfter (at once when runAfter is not after now), for kinds of which
// an app keeps one schedule: the earliest queued one is kept if it is due by
// then, brought forward if it was queued for later (a second job beside it
// would run the same work twice, or be left behind to run for nothing once
// this run decided), or, with none queued (or the one found just claimed by
// a runner), a new one is queued. The gate's result runs the registration's
// scoring job this way instead of queueing another run, and an answered
// contact challenge runs the gate again at once.
func QueueJobSoon(ctx context.Context, tx Tx, appID string, kind xpromo.JobKind, runAfter, now time.Time) (Job, error) {
	js, err := tx.AppJobs(ctx, appID)
	if err != nil {
		return Job{}, err
	}
	var next *Job
	for i := range js {
		if j := &js[i]; j.Kind == kind && j.Status == xpromo.JobQueued && (next == nil || j.RunAfter.Before(next.RunAfter)) {
			next = j
		}
	}
	if runAfter.Before(now) {
		runAfter = now
	}
	runAfter = runAfter.UTC().Truncate(time.Microsecond)
	if next != nil && !next.RunAfter.After(runAfter) {
		return *next, nil
	}
	if next != nil {
		moved, err := tx.RescheduleJob(ctx, next.ID, runAfter)
		if err != nil {
			return Job{}, err
		}
		if moved {
			next.RunAfter = runAfter
			return *next, nil
		}
	}
	j := newJob(appID, kind, now)
	j.RunAfter = runAfter
	return j, tx.InsertJob(ctx, j)
}

func newJob(appID string, kind xpromo.JobKind, now time.Time) Job {
	return Job{ID: ids.New("job"), AppID: appID, Kind: kind, Status: xpromo.JobQueued, CreatedAt: now, RunAfter: now}
}

// Job returns one of the app's jobs; another app's job is not_found.
func (s *Service) Job(ctx context.Context, appID, jobID string) (Job, error) {
	var jobs []Job
	if err := s.View(ctx, func(ctx context.Context, tx Tx) (err error) {
		jobs, err = tx.AppJobs(ctx, appID)
		return err
	}); err != nil {
		return Job{}, err
	}
	for _, j := range jobs {
		if j.ID == jobID {
			return j, nil
		}
	}
	return Job{}, apperr.New(apperr.NotFound, "no job %q for this app", jobID)
}

// notFound is the error for an app id that names no app.
func notFound() error { return apperr.New(apperr.NotFound, "app not found") }

// lockApp reads the app for update inside tx: a concurrent change to it
// waits until tx ends. A missing app is not_found.
func lockApp(ctx context.Context, tx Tx, appID string) (App, error) {
	a, ok, err := tx.GetApp(ctx, appID, true)
	if err != nil {
		return App{}, err
	}
	if !ok {
		return App{}, notFound()
	}
	return a, nil
}
