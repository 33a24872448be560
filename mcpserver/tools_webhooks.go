package mcpserver

import (
	"context"
	"net/http"
	"net/url"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The webhook tools: an app's endpoints, their delivery attempts and
// redelivery, and its events (docs/webhooks.md). Same rules as tools.go:
// each mirrors its REST operation, schemas resolved from openapi.json.

// webhookToolNames are the webhook tools' names (in ToolNames).
var webhookToolNames = []string{
	"create_webhook_endpoint", "list_webhook_endpoints", "update_webhook_endpoint",
	"delete_webhook_endpoint", "rotate_webhook_secret", "list_webhook_attempts",
	"redeliver_webhook", "list_events",
}

// Bounds of the webhook operations in openapi.json.
const (
	maxWebhookEndpoints  = 10
	maxDescriptionLength = 256
	maxSecretLength      = 128
	maxCursorLength      = 256
	maxAttempts          = 8
	maxAttemptLimit      = 100
	defaultAttemptLimit  = 20
	maxEventLimit        = 1000
	defaultEventLimit    = 100
	maxWaitSeconds       = 30
)

func eventTypeSchema() schema {
	values := make([]string, len(xpromo.EventTypes))
	for i, t := range xpromo.EventTypes {
		values[i] = string(t)
	}
	return enum("What happened: chain.state_changed, chain.cleared, chain.rejected, fraud.flagged, payout.sent or score.updated.", values...)
}

func endpointIDParam() param {
	return param{name: "endpoint_id", required: true, in: inPath,
		schema: nonEmpty(maxIDLength, "The endpoint's id (id of create_webhook_endpoint, we_…). Another app's endpoint answers not_found.")}
}

func webhookURLParam(required bool) param {
	return param{name: "url", required: required,
		schema: str(maxURLLength, "Where the events are POSTed: an absolute https URL (http too on a test-mode server) without user name, password or fragment, on the public internet (private, loopback and metadata addresses answer webhook_url_forbidden).")}
}

func eventTypesParam(name string, required bool, in where, desc string) param {
	return param{name: name, required: required, in: in,
		schema: array(eventTypeSchema(), len(xpromo.EventTypes), desc)}
}

func descriptionParam() param {
	return param{name: "description", schema: str(maxDescriptionLength, "A note for people, at most 256 characters.")}
}

// webhookEndpointSchema is a WebhookEndpoint; the secret is present only in
// the answers of create_webhook_endpoint and rotate_webhook_secret.
func webhookEndpointSchema() schema {
	props := schema{
		"id":          str(maxIDLength, "Opaque identifier (we_…)."),
		"app_id":      str(maxIDLength, ""),
		"url":         strFormat("uri", maxURLLength, ""),
		"events":      withDesc(schema{"type": "array", "items": eventTypeSchema(), "minItems": 1, "maxItems": len(xpromo.EventTypes)}, "The event types it receives."),
		"description": str(maxDescriptionLength, ""),
		"status":      enum("enabled, or disabled (no deliveries; see disabled_reason).", "enabled", "disabled"),
		"disabled_reason": schema{
			"description": "Why it is disabled: by_request (update_webhook_endpoint), gone (the receiver answered 410), failing (every attempt of an event failed). Null while enabled.",
			"oneOf":       []any{enum("", "by_request", "gone", "failing"), schema{"type": "null"}},
		},
		"disabled_at":                withDesc(schema{"type": []any{"string", "null"}, "format": "date-time", "maxLength": maxDateTimeLength}, ""),
		"created_at":                 dateTime(""),
		"updated_at":                 dateTime(""),
		"previous_secret_expires_at": withDesc(schema{"type": []any{"string", "null"}, "format": "date-time", "maxLength": maxDateTimeLength}, "After rotate_webhook_secret: until then every delivery is signed with the new and the previous secret."),
		"secret":                     str(maxSecretLength, "The signing secret (whsec_…), only in the answers of create_webhook_endpoint and rotate_webhook_secret: shown once, keep it."),
	}
	var required []string
	for _, k := range keys(props) {
		if k != "secret" {
			required = append(required, k)
		}
	}
	s := object("A webhook endpoint of the app.", required, props)
	s["additionalProperties"] = false
	return s
}

func webhookEndpointListSchema() schema {
	s := object("The app's webhook endpoints (without their secrets).", []string{"endpoints"}, schema{
		"endpoints": array(webhookEndpointSchema(), maxWebhookEndpoints, ""),
	})
	s["additionalProperties"] = false
	return s
}

func eventSchema() schema {
	s := allRequired("Something that happened to the app, as a webhook delivers it.", schema{
		"id":         str(maxIDLength, "evt_…; also the webhook-id header of its deliveries."),
		"type":       eventTypeSchema(),
		"app_id":     str(maxIDLength, ""),
		"created_at": dateTime("When it happened."),
		"data": withDesc(schema{"type": "object"},
			"The resource as the API shows it: {chain, previous_state} for chain.*, {reason, chain, previous_state} for fraud.flagged, {payout} for payout.sent, {score} for score.updated."),
	})
	s["additionalProperties"] = false
	return s
}

func eventPageSchema() schema {
	s := allRequired("A page of the app's events, oldest first.", schema{
		"events":      array(eventSchema(), maxEventLimit, ""),
		"has_more":    boolean("True when more events follow this page now: call again with cursor set to next_cursor."),
		"next_cursor": str(maxCursorLength, "Always present: call list_events again with cursor set to it to read what follows (with wait, a long poll for the next event)."),
	})
	s["additionalProperties"] = false
	return s
}

func webhookAttemptPageSchema() schema {
	attempt := allRequired("One delivery attempt.", schema{
		"id":               str(maxIDLength, ""),
		"event_id":         str(maxIDLength, ""),
		"endpoint_id":      str(maxIDLength, ""),
		"attempt":          withDesc(schema{"type": "integer", "minimum": 1, "maximum": maxAttempts}, "1 for the first try of the delivery."),
		"attempted_at":     dateTime(""),
		"status_code":      withDesc(schema{"type": []any{"integer", "null"}, "minimum": 100, "maximum": 999}, "The receiver's HTTP status; null when no answer came."),
		"latency_ms":       withDesc(schema{"type": "integer", "format": "int64", "minimum": 0, "maximum": 3_600_000}, ""),
		"succeeded":        boolean("True for a 2xx answer."),
		"error":            nullableString(64, "Why no answer came (timeout, connection_refused, forbidden_address, …); null when one came."),
		"response_excerpt": str(1024, "The start of the answer's body."),
		"next_attempt_at":  withDesc(schema{"type": []any{"string", "null"}, "format": "date-time", "maxLength": maxDateTimeLength}, "When the delivery is tried again; null when it will not be."),
	})
	attempt["additionalProperties"] = false
	s := object("A page of the endpoint's delivery attempts, newest first.", []string{"attempts"}, schema{
		"attempts":    array(attempt, maxAttemptLimit, ""),
		"next_cursor": str(maxCursorLength, "Present when older attempts exist: call again with cursor set to it."),
	})
	s["additionalProperties"] = false
	return s
}

func webhookDeliverySchema() schema {
	s := allRequired("The queued delivery.", schema{
		"event_id":        str(maxIDLength, ""),
		"endpoint_id":     str(maxIDLength, ""),
		"next_attempt_at": dateTime(""),
		"attempts":        withDesc(schema{"type": "integer", "minimum": 0, "maximum": maxAttempts}, "Attempts made so far (0: just queued)."),
	})
	s["additionalProperties"] = false
	return s
}

func webhookTools() []*tool {
	return []*tool{
		{
			name:  "create_webhook_endpoint",
			title: "Register a webhook endpoint",
			description: "Register a URL the app's events are POSTed to, signed with Standard Webhooks headers (POST /v1/apps/{app_id}/webhook-endpoints). " +
				"The answer carries the endpoint's signing secret (whsec_…) this once: the receiver verifies each delivery with it. At most 10 endpoints per app." + keyNote,
			params: []param{
				appIDParam(),
				webhookURLParam(true),
				eventTypesParam("events", true, inBody, "The event types it receives, 1 to 6, each once."),
				descriptionParam(),
				idempotencyKeyParam(),
			},
			output: webhookEndpointSchema(),
			hints:  hints{readOnly: false, destructive: false, idempotent: false, openWorld: false},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.WebhookEndpoint)
				err := c.Do(ctx, http.MethodPost, endpointsPath(a), a.body(), out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:        "list_webhook_endpoints",
			title:       "List the webhook endpoints",
			description: "List the app's webhook endpoints, without their secrets (GET /v1/apps/{app_id}/webhook-endpoints): URL, event types, status and why an endpoint is disabled." + keyNote,
			params:      []param{appIDParam()},
			output:      webhookEndpointListSchema(),
			hints:       read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.ListWebhookEndpoints(ctx, a.str("app_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "update_webhook_endpoint",
			title: "Change a webhook endpoint",
			description: "Change an endpoint's URL, event types, description or status (PATCH /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}); what is not given stays. " +
				"status disabled stops its deliveries (its queued ones are dropped); enabled re-enables it, clearing why it was disabled." + keyNote,
			params: []param{
				appIDParam(),
				endpointIDParam(),
				webhookURLParam(false),
				eventTypesParam("events", false, inBody, "The event types it receives instead, 1 to 6, each once."),
				descriptionParam(),
				{name: "status", schema: enum("enabled or disabled.", "enabled", "disabled")},
			},
			output: webhookEndpointSchema(),
			hints:  reversible,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.WebhookEndpoint)
				err := c.Do(ctx, http.MethodPatch, endpointsPath(a)+"/"+url.PathEscape(a.str("endpoint_id")), a.body(), out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "delete_webhook_endpoint",
			title: "Delete a webhook endpoint",
			description: "Delete an endpoint and its queued deliveries (DELETE /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}); its secret is gone with it. " +
				"The API answers 204 with no body; the tool answers {deleted: true, endpoint_id}. To pause deliveries instead, disable it with update_webhook_endpoint." + keyNote,
			params: []param{appIDParam(), endpointIDParam()},
			output: allRequired("The endpoint was deleted.", schema{
				"deleted":     constant("boolean", true, ""),
				"endpoint_id": str(maxIDLength, ""),
			}),
			hints: hints{readOnly: false, destructive: true, idempotent: false, openWorld: false},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				err := c.DeleteWebhookEndpoint(ctx, a.str("app_id"), a.str("endpoint_id"), opts...)
				return answer{value: map[string]any{"deleted": true, "endpoint_id": a.str("endpoint_id")}}, err
			},
		},
		{
			name:  "rotate_webhook_secret",
			title: "Rotate a webhook endpoint's secret",
			description: "Give an endpoint a new signing secret, returned once in secret (POST /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}/rotate-secret). " +
				"For 24 hours (previous_secret_expires_at) every delivery carries two signatures, the new secret's and the old one's, so the receiver can switch without missing an event." + keyNote,
			params: []param{appIDParam(), endpointIDParam(), idempotencyKeyParam()},
			output: webhookEndpointSchema(),
			hints:  hints{readOnly: false, destructive: false, idempotent: false, openWorld: false},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out, err := c.RotateWebhookSecret(ctx, a.str("app_id"), a.str("endpoint_id"), opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "list_webhook_attempts",
			title: "List an endpoint's delivery attempts",
			description: "Read one page of an endpoint's delivery attempts, newest first (GET /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}/attempts): the receiver's status or why no answer came, latency, the start of the answer, when the next attempt is due. " +
				"Failed deliveries are retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 24 h." + keyNote,
			params: []param{
				appIDParam(),
				endpointIDParam(),
				{name: "event_id", in: inQuery, schema: str(maxIDLength, "Optional: only the attempts of this event.")},
				{name: "limit", in: inQuery, schema: withDesc(
					schema{"type": "integer", "minimum": 1, "maximum": maxAttemptLimit, "default": defaultAttemptLimit},
					"Optional: attempts per page, 1 to 100 (20 when omitted).")},
				{name: "cursor", in: inQuery, schema: nonEmpty(maxCursorLength, "Optional: next_cursor of the previous page.")},
			},
			output: webhookAttemptPageSchema(),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.WebhookAttemptPage)
				err := c.Do(ctx, http.MethodGet, endpointsPath(a)+"/"+url.PathEscape(a.str("endpoint_id"))+"/attempts?"+a.query().Encode(), nil, out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "redeliver_webhook",
			title: "Deliver an event again",
			description: "Queue one event (of the last 30 days) for an endpoint again, due now, with a fresh schedule of attempts (POST /v1/apps/{app_id}/webhook-endpoints/{endpoint_id}/redeliver). " +
				"A disabled endpoint answers webhook_endpoint_disabled: enable it first." + keyNote,
			params: []param{
				appIDParam(),
				endpointIDParam(),
				{name: "event_id", required: true, schema: str(maxIDLength, "The event to deliver again (id of list_events).")},
				idempotencyKeyParam(),
			},
			output: webhookDeliverySchema(),
			hints:  hints{readOnly: false, destructive: false, idempotent: false, openWorld: true},
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.WebhookDelivery)
				err := c.Do(ctx, http.MethodPost, endpointsPath(a)+"/"+url.PathEscape(a.str("endpoint_id"))+"/redeliver", a.body(), out, opts...)
				return answer{value: out}, err
			},
		},
		{
			name:  "list_events",
			title: "List the app's events",
			description: "Read one page of the app's events of the last 30 days, oldest first (GET /v1/apps/{app_id}/events): what its webhooks deliver, so a receiver that was down can catch up. " +
				"next_cursor is always present: call again with cursor set to it to read what follows; with wait (seconds, up to 30) a call that finds nothing new waits for the next event." + keyNote,
			params: []param{
				appIDParam(),
				eventTypesParam("type", false, inQuery, "Optional: only these event types."),
				{name: "since", in: inQuery, schema: dateTime("Optional: events at or after this time (RFC 3339); 30 days ago when omitted, never earlier. Ignored with cursor.")},
				{name: "cursor", in: inQuery, schema: nonEmpty(maxCursorLength, "Optional: next_cursor of the previous page.")},
				{name: "limit", in: inQuery, schema: withDesc(
					schema{"type": "integer", "minimum": 1, "maximum": maxEventLimit, "default": defaultEventLimit},
					"Optional: events per page, 1 to 1000 (100 when omitted).")},
				{name: "wait", in: inQuery, schema: withDesc(
					schema{"type": "integer", "minimum": 0, "maximum": maxWaitSeconds, "default": 0},
					"Optional: seconds to wait for an event when none follows the cursor yet (a long poll).")},
			},
			output: eventPageSchema(),
			hints:  read,
			call: func(ctx context.Context, c *xpromo.Client, a arguments, opts []xpromo.CallOption) (answer, error) {
				out := new(xpromo.EventPage)
				err := c.Do(ctx, http.MethodGet, "/v1/apps/"+url.PathEscape(a.str("app_id"))+"/events?"+a.query().Encode(), nil, out, opts...)
				return answer{value: out}, err
			},
		},
	}
}

// endpointsPath is the path of the app's webhook endpoints.
func endpointsPath(a arguments) string {
	return "/v1/apps/" + url.PathEscape(a.str("app_id")) + "/webhook-endpoints"
}
