// Package webhooks sends an app's events to the URLs it registers, signed in
// the Standard Webhooks format (decisions §8, docs/webhooks.md), and lets it
// read them back for 30 days.
//
// The events themselves are the outbox (package outbox): every operation
// that causes one writes it in its own transaction. This package owns what
// happens next:
//
//   - endpoints: an app's URLs (at most MaxEndpoints), the event types each
//     receives and the secret that signs its deliveries;
//   - the worker (worker.go), which runs in every server instance: it
//     dispatches new events into a queue of deliveries, one per subscribed
//     endpoint; delivers due ones over server/outbound with a lease, so that
//     several instances share the queue and a dead one's deliveries are
//     taken over; retries on Schedule; disables an endpoint that answers 410
//     or fails every attempt; and purges the log after Retention;
//   - the events API: an app's events, paged by cursor, with a long poll.
//
// Delivery is at least once: a receiver dedupes on webhook-id.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/cursor"
	"github.com/xpromo/xpromo/server/outbox"
)

// Limits and durations of the contract (docs/webhooks.md).
const (
	// MaxEndpoints is how many endpoints an app may have.
	MaxEndpoints = 10
	// MaxURLLength bounds an endpoint's URL.
	MaxURLLength = 2048
	// MaxDescriptionLength bounds an endpoint's description, in characters.
	MaxDescriptionLength = 256
	// Retention is how long events (and attempts) stay readable.
	Retention = 30 * 24 * time.Hour
	// RotationOverlap is how long the previous secret keeps signing after a
	// rotation.
	RotationOverlap = 24 * time.Hour
	// ExcerptBytes is how much of a receiver's answer an attempt keeps.
	ExcerptBytes = 1024
	// DrainBytes is the most read of an answer past its excerpt, to reuse
	// the connection; a longer answer closes it.
	DrainBytes = 64 << 10
)

// Schedule is the wait before each retry: the first attempt is made as soon
// as the event is dispatched, the second 5 s after the first failed, …, the
// eighth and last 24 h after the seventh. When it fails too, the endpoint
// is disabled (failing).
var Schedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 24 * time.Hour,
}

// MaxAttempts is the number of attempts of one delivery: the first and one
// per Schedule entry.
var MaxAttempts = len(Schedule) + 1

// Endpoint is a URL an app receives events at.
type Endpoint struct {
	ID          string // we_…
	AppID       string
	URL         string
	Events      []xpromo.EventType
	Description string
	Status      xpromo.WebhookEndpointStatus
	// DisabledReason and DisabledAt are zero while enabled.
	DisabledReason xpromo.WebhookDisabledReason
	DisabledAt     time.Time
	// Secret signs deliveries; PreviousSecret signs alongside it until
	// PreviousSecretExpiresAt (zero: none).
	Secret                  string
	PreviousSecret          string
	PreviousSecretExpiresAt time.Time
	CreatedAt, UpdatedAt    time.Time
}

// Subscribed reports whether e receives events of type t.
func (e Endpoint) Subscribed(t xpromo.EventType) bool {
	for _, x := range e.Events {
		if x == t {
			return true
		}
	}
	return false
}

// secrets are the secrets that sign a delivery at now, newest first.
func (e Endpoint) secrets(now time.Time) []string {
	if e.PreviousSecret != "" && now.Before(e.PreviousSecretExpiresAt) {
		return []string{e.Secret, e.PreviousSecret}
	}
	return []string{e.Secret}
}

// Wire is the endpoint as the API shows it, without its secret.
func (e Endpoint) Wire(now time.Time) xpromo.WebhookEndpoint {
	w := xpromo.WebhookEndpoint{
		ID: e.ID, AppID: e.AppID, URL: e.URL, Events: e.Events, Description: e.Description,
		Status: e.Status, CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC(),
	}
	if w.Events == nil {
		w.Events = []xpromo.EventType{}
	}
	if e.Status == xpromo.WebhookEndpointDisabled {
		reason, at := e.DisabledReason, e.DisabledAt.UTC()
		w.DisabledReason, w.DisabledAt = &reason, &at
	}
	if e.PreviousSecret != "" && now.Before(e.PreviousSecretExpiresAt) {
		at := e.PreviousSecretExpiresAt.UTC()
		w.PreviousSecretExpiresAt = &at
	}
	return w
}

// Delivery is a queued delivery of one event to one endpoint.
type Delivery struct {
	EndpointID     string
	EventID        string
	AppID          string
	EventCreatedAt time.Time // the event's, for the order of sending
	Attempts       int       // attempts made so far
	// NextAttemptAt is when the delivery is due; a claim moves it to the end
	// of the claim's lease, and that value identifies the claim.
	NextAttemptAt time.Time
}

// Attempt is the record of one attempt.
type Attempt struct {
	ID          string // wha_…
	EndpointID  string
	EventID     string
	AppID       string
	Attempt     int // 1 for the first attempt of the delivery
	AttemptedAt time.Time
	StatusCode  int // 0: no answer
	LatencyMS   int64
	Succeeded   bool
	Error       string // "" when an answer came
	Excerpt     string
	// NextAttemptAt is when the delivery is tried again; zero when it
	// succeeded or will not be.
	NextAttemptAt time.Time
}

// Wire is the attempt as the API shows it.
func (a Attempt) Wire() xpromo.WebhookAttempt {
	w := xpromo.WebhookAttempt{
		ID: a.ID, EventID: a.EventID, EndpointID: a.EndpointID, Attempt: a.Attempt,
		AttemptedAt: a.AttemptedAt.UTC(), LatencyMS: a.LatencyMS, Succeeded: a.Succeeded,
		ResponseExcerpt: a.Excerpt,
	}
	if a.StatusCode != 0 {
		code := a.StatusCode
		w.StatusCode = &code
	}
	if a.Error != "" {
		e := a.Error
		w.Error = &e
	}
	if !a.NextAttemptAt.IsZero() {
		at := a.NextAttemptAt.UTC()
		w.NextAttemptAt = &at
	}
	return w
}

// Position is a place in an app's event log: after the event (CreatedAt,
// ID), in the order (created_at, id). An empty ID is before every event of
// that instant.
type Position = cursor.Position

// EventQuery selects a page of an app's events.
type EventQuery struct {
	AppID string
	After Position
	Types []xpromo.EventType // any when empty
	Limit int
}

// AttemptQuery selects a page of an endpoint's attempts, newest first.
type AttemptQuery struct {
	EndpointID string
	EventID    string    // "" for every event
	Before     *Position // nil: from the newest
	Limit      int
}

// Claimed is a delivery claimed for sending, with what sending needs.
type Claimed struct {
	Delivery
	Event    outbox.Event
	Endpoint Endpoint
}

// Result is what became of one claimed delivery, for RecordResults.
type Result struct {
	Delivery Delivery // as claimed (NextAttemptAt: the claim's token)
	// Attempt is the attempt made; nil when the delivery was released
	// without one (Release).
	Attempt *Attempt
	// Release, when the delivery was not attempted, makes it due again at
	// NextAttemptAt without counting an attempt.
	Release       bool
	NextAttemptAt time.Time
	// Done deletes the delivery (it succeeded, or its endpoint is being
	// disabled); otherwise it is rescheduled at NextAttemptAt with one more
	// attempt counted.
	Done bool
	// Disable, when set, disables the endpoint for this reason and drops its
	// queue.
	Disable xpromo.WebhookDisabledReason
}

// Tx is what the webhooks domain needs from a transaction.
type Tx interface {
	// GetApp reads an app; with lock, its row stays locked until the end of
	// the transaction (serialising endpoint creations, so the limit holds).
	GetApp(ctx context.Context, id string, lock bool) (a apps.App, ok bool, err error)

	// InsertWebhookEndpoint stores a new endpoint.
	InsertWebhookEndpoint(ctx context.Context, e Endpoint) error
	// WebhookEndpoint reads one of the app's endpoints; found is false when
	// the app has none of that id.
	WebhookEndpoint(ctx context.Context, appID, id string) (e Endpoint, found bool, err error)
	// WebhookEndpoints lists the app's endpoints, oldest first.
	WebhookEndpoints(ctx context.Context, appID string) ([]Endpoint, error)
	// UpdateWebhookEndpoint stores every field of e but its id, app and
	// creation time.
	UpdateWebhookEndpoint(ctx context.Context, e Endpoint) error
	// DeleteWebhookEndpoint deletes the endpoint with its queue and attempts;
	// found is false when the app has none of that id.
	DeleteWebhookEndpoint(ctx context.Context, appID, id string) (found bool, err error)

	// AppEvents returns up to q.Limit of the app's events after q.After, in
	// the order (created_at, id).
	AppEvents(ctx context.Context, q EventQuery) ([]outbox.Event, error)
	// AppEvent reads one of the app's events.
	AppEvent(ctx context.Context, appID, id string) (e outbox.Event, found bool, err error)

	// ClaimUndispatched marks up to limit outbox rows that were never
	// dispatched as dispatched at now and returns their events, oldest
	// first: a row written for two apps (outbox.Event.Also) is each app's
	// event, so up to 2×limit events. Rows another transaction holds are
	// skipped (PostgreSQL: FOR UPDATE SKIP LOCKED).
	ClaimUndispatched(ctx context.Context, now time.Time, limit int) ([]outbox.Event, error)
	// EnabledWebhookEndpoints returns the enabled endpoints of these apps.
	EnabledWebhookEndpoints(ctx context.Context, appIDs []string) ([]Endpoint, error)
	// InsertDeliveries queues deliveries; one that is already queued is
	// made due again at its NextAttemptAt with its attempts reset to
	// d.Attempts (a redelivery).
	InsertDeliveries(ctx context.Context, ds []Delivery) error
	// ClaimDeliveries takes up to limit deliveries due at now, of enabled
	// endpoints, soonest due first, and moves their NextAttemptAt to
	// leaseEnd (the claim's token). Rows another transaction holds are
	// skipped (PostgreSQL: FOR UPDATE SKIP LOCKED). Deliveries whose event
	// no longer exists are deleted.
	ClaimDeliveries(ctx context.Context, now, leaseEnd time.Time, limit int) ([]Claimed, error)
	// RecordResults applies the results of one claim: attempts inserted;
	// each delivery still held by the claim (its NextAttemptAt unchanged)
	// deleted, rescheduled or released; endpoints disabled with their queue
	// dropped.
	RecordResults(ctx context.Context, now time.Time, results []Result) error
	// DropWebhookDeliveries deletes an endpoint's queue.
	DropWebhookDeliveries(ctx context.Context, endpointID string) error

	// WebhookAttempts returns up to q.Limit of an endpoint's attempts,
	// newest first (attempted_at, then id, descending).
	WebhookAttempts(ctx context.Context, q AttemptQuery) ([]Attempt, error)

	// PurgeEvents deletes up to limit outbox rows created before cutoff
	// (a row written for two apps holds both apps' event), with their
	// queued deliveries; PurgeWebhookAttempts up to limit attempts
	// made before cutoff. Both return how many rows went.
	PurgeEvents(ctx context.Context, cutoff time.Time, limit int) (int, error)
	PurgeWebhookAttempts(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// Txer runs fn in a transaction (storage.Updater or storage.Viewer).
type Txer func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error

// Service is the webhooks domain.
type Service struct {
	Update Txer
	View   Txer
	// Client sends deliveries: an outbound.New client. Its options must be
	// Policy's.
	Client *http.Client
	// Policy is what URLs endpoints may have (http, loopback).
	Policy URLPolicy
	Now    func() time.Time
	// Wall is the clock of the webhook-timestamp header (nil: Now).
	// Receivers compare it with their own clock to refuse replays, so it
	// must be the real time even when Now is a test-mode clock moved
	// ahead (POST /v1/admin/clock/advance): wire sets time.Now.
	Wall func() time.Time
	Log  *slog.Logger

	// Worker settings; zero means the default (worker.go).
	Timeout     time.Duration // one request
	Lease       time.Duration // a claim's hold on its deliveries
	ClaimBatch  int           // deliveries per claim
	Concurrency int           // endpoints sent to at once per claim
	// PollInterval is how often the events API's long poll reads the store.
	PollInterval time.Duration
}

func (s *Service) now() time.Time { return s.Now().UTC() }

func (s *Service) wall() time.Time {
	if s.Wall == nil {
		return s.now()
	}
	return s.Wall().UTC()
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// newSecret returns "whsec_" + standard base64 of 32 random bytes.
func newSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(b[:])
}
