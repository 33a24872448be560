package xpromo

import (
	"encoding/json"
	"time"
)

// EventType is the kind of an event: what happened (docs/webhooks.md).
type EventType string

// Event types, as the API document lists them.
const (
	EventChainStateChanged EventType = "chain.state_changed" // an attribution chain changed state
	EventChainCleared      EventType = "chain.cleared"       // a chain cleared: the advertiser paid, the publisher earned
	EventChainRejected     EventType = "chain.rejected"      // a chain (or a refused claim) was rejected
	EventFraudFlagged      EventType = "fraud.flagged"       // a fraud rule refused a click or an install claim, or a cleared chain was clawed back
	EventPayoutSent        EventType = "payout.sent"         // a payout left the wallet for the connected account
	EventScoreUpdated      EventType = "score.updated"       // the app's score or status changed
)

// EventTypes are every event type, in the API document's order.
var EventTypes = []EventType{
	EventChainStateChanged, EventChainCleared, EventChainRejected,
	EventFraudFlagged, EventPayoutSent, EventScoreUpdated,
}

// Valid reports whether t is one of the documented event types.
func (t EventType) Valid() bool {
	for _, k := range EventTypes {
		if t == k {
			return true
		}
	}
	return false
}

// Event is something that happened to an app, as GET /v1/apps/{app_id}/events
// lists it and as a webhook delivers it (the request body is this object).
// Each app receives its own copy (its own id) of an event that concerns two
// apps, such as a chain's.
type Event struct {
	ID        string    `json:"id"` // evt_…; also the webhook-id header
	Type      EventType `json:"type"`
	AppID     string    `json:"app_id"`     // the app the event is for
	CreatedAt time.Time `json:"created_at"` // when it happened
	// Data is the resource as the API shows it; its shape depends on Type:
	// ChainEventData (chain.*), FraudEventData, PayoutEventData, ScoreEventData.
	Data json.RawMessage `json:"data"`
}

// ChainEventData is the data of chain.state_changed, chain.cleared and
// chain.rejected.
type ChainEventData struct {
	Chain Chain `json:"chain"`
	// PreviousState is the state the chain left; null for a refused claim
	// recorded directly as rejected.
	PreviousState *ChainState `json:"previous_state"`
}

// FraudEventData is the data of fraud.flagged.
type FraudEventData struct {
	Reason        ChainReason `json:"reason"` // the fraud_ reason code
	Chain         Chain       `json:"chain"`
	PreviousState *ChainState `json:"previous_state"`
}

// PayoutEventData is the data of payout.sent.
type PayoutEventData struct {
	Payout PayoutResponse `json:"payout"`
}

// ScoreEventData is the data of score.updated: the score as
// GET /v1/apps/{app_id}/score shows it.
type ScoreEventData struct {
	Score Score `json:"score"`
}

// EventPage is a page of GET /v1/apps/{app_id}/events, oldest first.
type EventPage struct {
	Events []Event `json:"events"`
	// HasMore is true when more events exist after this page right now.
	HasMore bool `json:"has_more"`
	// NextCursor is always present: pass it as `cursor` to read what comes
	// after this page, including events not written yet (with `wait`).
	NextCursor string `json:"next_cursor"`
}

// MarshalJSON emits Events as [] when nil.
func (p EventPage) MarshalJSON() ([]byte, error) {
	type plain EventPage
	if p.Events == nil {
		p.Events = []Event{}
	}
	return json.Marshal(plain(p))
}

// EventParams filter and page GET /v1/apps/{app_id}/events.
type EventParams struct {
	Types  []EventType // only these types (any when empty)
	Since  time.Time   // events at or after (default and earliest: 30 days ago)
	Cursor string      // a previous page's next_cursor
	Limit  int         // 1–1000, default 100
	// Wait, when no event follows the cursor yet, holds the request up to
	// this long (at most 30 s) for one to arrive: a long poll.
	Wait time.Duration
}

// WebhookEndpointStatus is whether an endpoint receives deliveries.
type WebhookEndpointStatus string

// Webhook endpoint statuses.
const (
	WebhookEndpointEnabled  WebhookEndpointStatus = "enabled"
	WebhookEndpointDisabled WebhookEndpointStatus = "disabled"
)

// WebhookDisabledReason says why an endpoint is disabled.
type WebhookDisabledReason string

// Reasons an endpoint is disabled.
const (
	WebhookDisabledByRequest WebhookDisabledReason = "by_request" // PATCH status=disabled
	WebhookDisabledGone      WebhookDisabledReason = "gone"       // the receiver answered 410 Gone
	WebhookDisabledFailing   WebhookDisabledReason = "failing"    // every attempt of an event failed
)

// WebhookEndpoint is a URL an app receives events at.
type WebhookEndpoint struct {
	ID          string                `json:"id"` // we_…
	AppID       string                `json:"app_id"`
	URL         string                `json:"url"`
	Events      []EventType           `json:"events"` // the types it receives
	Description string                `json:"description"`
	Status      WebhookEndpointStatus `json:"status"`
	// DisabledReason is null while enabled.
	DisabledReason *WebhookDisabledReason `json:"disabled_reason"`
	DisabledAt     *time.Time             `json:"disabled_at"`
	CreatedAt      time.Time              `json:"created_at"`
	UpdatedAt      time.Time              `json:"updated_at"`
	// PreviousSecretExpiresAt is set after a rotation: until then, each
	// delivery is signed with both the new and the previous secret.
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	// Secret (whsec_…) is present only in the answers of create and
	// rotate-secret: it is shown once.
	Secret string `json:"secret,omitempty"`
}

// WebhookEndpointList is GET /v1/apps/{app_id}/webhook-endpoints.
type WebhookEndpointList struct {
	Endpoints []WebhookEndpoint `json:"endpoints"`
}

// MarshalJSON emits Endpoints as [] when nil.
func (l WebhookEndpointList) MarshalJSON() ([]byte, error) {
	type plain WebhookEndpointList
	if l.Endpoints == nil {
		l.Endpoints = []WebhookEndpoint{}
	}
	return json.Marshal(plain(l))
}

// CreateWebhookEndpointRequest is the body of
// POST /v1/apps/{app_id}/webhook-endpoints.
type CreateWebhookEndpointRequest struct {
	URL         string      `json:"url"`
	Events      []EventType `json:"events"`
	Description string      `json:"description,omitempty"`
}

// UpdateWebhookEndpointRequest is the body of
// PATCH /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}: absent fields
// stay as they are. Enabling a disabled endpoint clears its reason.
type UpdateWebhookEndpointRequest struct {
	URL         *string                `json:"url,omitempty"`
	Events      []EventType            `json:"events,omitempty"`
	Description *string                `json:"description,omitempty"`
	Status      *WebhookEndpointStatus `json:"status,omitempty"`
}

// WebhookAttempt is one delivery attempt of one event to one endpoint.
type WebhookAttempt struct {
	ID          string    `json:"id"` // wha_…
	EventID     string    `json:"event_id"`
	EndpointID  string    `json:"endpoint_id"`
	Attempt     int       `json:"attempt"` // 1 for the first try of this delivery
	AttemptedAt time.Time `json:"attempted_at"`
	// StatusCode is the receiver's HTTP status; null when no answer came.
	StatusCode *int  `json:"status_code"`
	LatencyMS  int64 `json:"latency_ms"`
	// Succeeded is true for a 2xx answer.
	Succeeded bool `json:"succeeded"`
	// Error says why no answer came or why it could not be read (timeout,
	// connection_refused, forbidden_address, tls, response_too_large, …);
	// null when an answer came.
	Error *string `json:"error"`
	// ResponseExcerpt is the first KiB of the answer's body (text).
	ResponseExcerpt string `json:"response_excerpt"`
	// NextAttemptAt is when the delivery is tried again; null when it
	// succeeded or will not be retried.
	NextAttemptAt *time.Time `json:"next_attempt_at"`
}

// WebhookAttemptPage is GET /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}/attempts,
// newest first.
type WebhookAttemptPage struct {
	Attempts   []WebhookAttempt `json:"attempts"`
	NextCursor *string          `json:"next_cursor,omitempty"`
}

// MarshalJSON emits Attempts as [] when nil.
func (p WebhookAttemptPage) MarshalJSON() ([]byte, error) {
	type plain WebhookAttemptPage
	if p.Attempts == nil {
		p.Attempts = []WebhookAttempt{}
	}
	return json.Marshal(plain(p))
}

// RedeliverRequest is the body of
// POST /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}/redeliver.
type RedeliverRequest struct {
	EventID string `json:"event_id"`
}

// WebhookDelivery is a queued delivery of one event to one endpoint.
type WebhookDelivery struct {
	EventID       string    `json:"event_id"`
	EndpointID    string    `json:"endpoint_id"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
	// Attempts made so far for this delivery (0 when just queued).
	Attempts int `json:"attempts"`
}
