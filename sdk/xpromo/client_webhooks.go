package xpromo

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Webhook endpoints, their attempts and redelivery, and the events API
// (docs/webhooks.md). A key acts only on its own app: another app's ids
// answer 404 not_found, like missing ones. Verify what the server sends with
// package webhook (sdk/webhook).

// CreateWebhookEndpoint registers a URL the app receives events at (POST
// /v1/apps/{app_id}/webhook-endpoints). The answer carries the endpoint's
// Secret (whsec_…): it is shown this once, keep it.
//
// Refusals: 422 invalid_url (not an absolute https URL; http only in test
// mode; userinfo or a fragment), webhook_url_forbidden (an address of a
// private, loopback or metadata range), invalid_event_type, too_long
// (description over 256 characters); 409 too_many_webhook_endpoints.
func (c *Client) CreateWebhookEndpoint(ctx context.Context, appID string, params *CreateWebhookEndpointRequest, opts ...CallOption) (*WebhookEndpoint, error) {
	out := new(WebhookEndpoint)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/webhook-endpoints", appID), body: nonNil(params)}, out, opts)
	return result(out, err)
}

// ListWebhookEndpoints lists the app's endpoints, without their secrets
// (GET /v1/apps/{app_id}/webhook-endpoints).
func (c *Client) ListWebhookEndpoints(ctx context.Context, appID string, opts ...CallOption) (*WebhookEndpointList, error) {
	out := new(WebhookEndpointList)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/webhook-endpoints", appID)}, out, opts)
	return result(out, err)
}

// GetWebhookEndpoint reads one endpoint, without its secret (GET
// /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}).
func (c *Client) GetWebhookEndpoint(ctx context.Context, appID, endpointID string, opts ...CallOption) (*WebhookEndpoint, error) {
	out := new(WebhookEndpoint)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/webhook-endpoints/%s", appID, endpointID)}, out, opts)
	return result(out, err)
}

// UpdateWebhookEndpoint changes the fields params sets (PATCH
// /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}); the others stay.
// Status enabled re-enables a disabled endpoint (clearing its reason);
// status disabled stops deliveries (reason by_request). Refusals as
// CreateWebhookEndpoint's, plus 422 invalid_type (a status other than
// enabled or disabled).
func (c *Client) UpdateWebhookEndpoint(ctx context.Context, appID, endpointID string, params *UpdateWebhookEndpointRequest, opts ...CallOption) (*WebhookEndpoint, error) {
	out := new(WebhookEndpoint)
	_, err := c.call(ctx, request{method: http.MethodPatch, path: pathf("/v1/apps/%s/webhook-endpoints/%s", appID, endpointID), body: nonNil(params)}, out, opts)
	return result(out, err)
}

// DeleteWebhookEndpoint deletes an endpoint and its queued deliveries
// (DELETE /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}).
func (c *Client) DeleteWebhookEndpoint(ctx context.Context, appID, endpointID string, opts ...CallOption) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/apps/%s/webhook-endpoints/%s", appID, endpointID)}, nil, opts)
	return err
}

// RotateWebhookSecret gives the endpoint a new secret, returned once in the
// answer's Secret (POST …/webhook-endpoints/{endpoint_id}/rotate-secret).
// Until PreviousSecretExpiresAt (24 hours) every delivery is signed with
// both, so receivers can switch without losing an event.
func (c *Client) RotateWebhookSecret(ctx context.Context, appID, endpointID string, opts ...CallOption) (*WebhookEndpoint, error) {
	out := new(WebhookEndpoint)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/webhook-endpoints/%s/rotate-secret", appID, endpointID)}, out, opts)
	return result(out, err)
}

// WebhookAttemptParams filter and page ListWebhookAttempts. The zero value
// (or nil) reads the newest attempts, 20 a page.
type WebhookAttemptParams struct {
	EventID string // only the attempts of this event
	Limit   int    // 1–100 (0: the server's default, 20)
	Cursor  string // a previous page's NextCursor
}

// ListWebhookAttempts reads one page of an endpoint's delivery attempts,
// newest first (GET …/webhook-endpoints/{endpoint_id}/attempts). When
// older attempts exist the page's NextCursor is set.
func (c *Client) ListWebhookAttempts(ctx context.Context, appID, endpointID string, params *WebhookAttemptParams, opts ...CallOption) (*WebhookAttemptPage, error) {
	q := url.Values{}
	if p := params; p != nil {
		if p.EventID != "" {
			q.Set("event_id", p.EventID)
		}
		if p.Limit != 0 {
			q.Set("limit", strconv.Itoa(p.Limit))
		}
		if p.Cursor != "" {
			q.Set("cursor", p.Cursor)
		}
	}
	out := new(WebhookAttemptPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/webhook-endpoints/%s/attempts", appID, endpointID), query: q}, out, opts)
	return result(out, err)
}

// Redeliver queues one event again for an endpoint, due now (POST
// …/webhook-endpoints/{endpoint_id}/redeliver).
//
// Refusals: 409 webhook_endpoint_disabled (enable it first); 404 not_found
// for an event of another app or older than 30 days.
func (c *Client) Redeliver(ctx context.Context, appID, endpointID, eventID string, opts ...CallOption) (*WebhookDelivery, error) {
	out := new(WebhookDelivery)
	_, err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/apps/%s/webhook-endpoints/%s/redeliver", appID, endpointID),
		body: RedeliverRequest{EventID: eventID}}, out, opts)
	return result(out, err)
}

// ListEvents reads one page of the app's events of the last 30 days, oldest
// first (GET /v1/apps/{app_id}/events). The page's NextCursor is always
// set: pass it back as params.Cursor to read what follows, now or later.
// With params.Wait, a request that finds nothing after the cursor is held
// until an event arrives or Wait passes (a long poll; the answer is then an
// empty page with the same NextCursor). params may be nil. Events walks
// every page.
//
// Refusals: 422 invalid_event_type, invalid_date (Since), invalid_cursor,
// invalid_limit, invalid_duration (Wait over 30 s).
func (c *Client) ListEvents(ctx context.Context, appID string, params *EventParams, opts ...CallOption) (*EventPage, error) {
	q := url.Values{}
	if p := params; p != nil {
		for _, t := range p.Types {
			q.Add("type", string(t))
		}
		if !p.Since.IsZero() {
			q.Set("since", p.Since.UTC().Format(time.RFC3339Nano))
		}
		if p.Cursor != "" {
			q.Set("cursor", p.Cursor)
		}
		if p.Limit != 0 {
			q.Set("limit", strconv.Itoa(p.Limit))
		}
		if p.Wait > 0 {
			// Whole seconds, at least one: a shorter wait is still a wait.
			q.Set("wait", strconv.FormatInt(int64(max((p.Wait+time.Second-1)/time.Second, 1)), 10))
		}
	}
	out := new(EventPage)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/events", appID), query: q}, out, opts)
	return result(out, err)
}

// Events iterates over the app's events from params (nil: the last 30
// days, every type), oldest first, page after page, until it has read every
// event written so far (params.Wait is ignored: to follow new events as
// they come, call ListEvents with Wait and the last page's NextCursor, as
// `xpromo listen` does). An error ends the iteration, yielded with a zero
// event:
//
//	for ev, err := range c.Events(ctx, appID, &xpromo.EventParams{Types: []xpromo.EventType{xpromo.EventChainCleared}}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(ev.ID, ev.Type, ev.CreatedAt)
//	}
func (c *Client) Events(ctx context.Context, appID string, params *EventParams, opts ...CallOption) iter.Seq2[Event, error] {
	var p EventParams
	if params != nil {
		p = *params
	}
	p.Wait = 0
	return paginate(p.Cursor, "events of "+appID, func(cursor string) ([]Event, string, bool, error) {
		p := p
		p.Cursor = cursor
		page, err := c.ListEvents(ctx, appID, &p, opts...)
		if err != nil {
			return nil, "", false, err
		}
		return page.Events, page.NextCursor, page.HasMore, nil
	})
}

// GetEvent reads one of the app's events (GET
// /v1/apps/{app_id}/events/{event_id}).
func (c *Client) GetEvent(ctx context.Context, appID, eventID string, opts ...CallOption) (*Event, error) {
	out := new(Event)
	_, err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/apps/%s/events/%s", appID, eventID)}, out, opts)
	return result(out, err)
}
