package xpromo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

const endpointJSON = `{"id":"we_1","app_id":"app_1","url":"https://hooks.example.com/x","events":["chain.cleared","payout.sent"],
"description":"prod","status":"enabled","disabled_reason":null,"disabled_at":null,"created_at":"2026-11-21T09:00:00Z",
"updated_at":"2026-11-21T09:00:00Z","previous_secret_expires_at":null%s}`

// TestWebhookEndpointCalls: each endpoint method sends its method, path and
// body, and decodes the answer; POSTs carry an Idempotency-Key (the
// caller's when given).
func TestWebhookEndpointCalls(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/apps/app_1/webhook-endpoints":
			writeJSON(w, 201, fmt.Sprintf(endpointJSON, `,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`))
		case "GET /v1/apps/app_1/webhook-endpoints":
			writeJSON(w, 200, `{"endpoints":[`+fmt.Sprintf(endpointJSON, "")+`]}`)
		case "GET /v1/apps/app_1/webhook-endpoints/we_1", "PATCH /v1/apps/app_1/webhook-endpoints/we_1":
			writeJSON(w, 200, fmt.Sprintf(endpointJSON, ""))
		case "DELETE /v1/apps/app_1/webhook-endpoints/we_1":
			w.WriteHeader(http.StatusNoContent)
		case "POST /v1/apps/app_1/webhook-endpoints/we_1/rotate-secret":
			rotated := strings.Replace(fmt.Sprintf(endpointJSON, `,"secret":"whsec_new"`), `"previous_secret_expires_at":null`, `"previous_secret_expires_at":"2026-11-22T09:00:00Z"`, 1)
			writeJSON(w, 200, rotated)
		case "GET /v1/apps/app_1/webhook-endpoints/we_1/attempts":
			writeJSON(w, 200, `{"attempts":[{"id":"wha_2","event_id":"evt_1","endpoint_id":"we_1","attempt":2,"attempted_at":"2026-11-21T09:00:05Z",
"status_code":200,"latency_ms":12,"succeeded":true,"error":null,"response_excerpt":"ok","next_attempt_at":null},
{"id":"wha_1","event_id":"evt_1","endpoint_id":"we_1","attempt":1,"attempted_at":"2026-11-21T09:00:00Z",
"status_code":null,"latency_ms":3,"succeeded":false,"error":"connection_refused","response_excerpt":"","next_attempt_at":"2026-11-21T09:00:05Z"}],"next_cursor":"c2"}`)
		case "POST /v1/apps/app_1/webhook-endpoints/we_1/redeliver":
			writeJSON(w, 202, `{"event_id":"evt_1","endpoint_id":"we_1","next_attempt_at":"2026-11-21T10:00:00Z","attempts":0}`)
		case "POST /v1/apps/app_1/webhook-endpoints/we_off/redeliver":
			writeJSON(w, 409, errBody("webhook_endpoint_disabled", "the endpoint is disabled", nil))
		default:
			writeJSON(w, 404, errBody("not_found", "no route", nil))
		}
	})
	c := f.client()
	ctx := context.Background()

	created, err := c.CreateWebhookEndpoint(ctx, "app_1", &xpromo.CreateWebhookEndpointRequest{URL: "https://hooks.example.com/x",
		Events: []xpromo.EventType{xpromo.EventChainCleared, xpromo.EventPayoutSent}, Description: "prod"}, xpromo.WithIdempotencyKey("k-1"))
	if err != nil {
		t.Fatal(err)
	}
	if created.ID != "we_1" || !strings.HasPrefix(created.Secret, "whsec_") || len(created.Events) != 2 || created.DisabledReason != nil {
		t.Errorf("created = %+v", created)
	}
	list, err := c.ListWebhookEndpoints(ctx, "app_1")
	if err != nil || len(list.Endpoints) != 1 || list.Endpoints[0].Secret != "" {
		t.Errorf("list = %+v, %v", list, err)
	}
	got, err := c.GetWebhookEndpoint(ctx, "app_1", "we_1")
	if err != nil || got.URL != "https://hooks.example.com/x" {
		t.Errorf("get = %+v, %v", got, err)
	}
	disabled := xpromo.WebhookEndpointDisabled
	desc := ""
	if _, err := c.UpdateWebhookEndpoint(ctx, "app_1", "we_1", &xpromo.UpdateWebhookEndpointRequest{Status: &disabled, Description: &desc}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteWebhookEndpoint(ctx, "app_1", "we_1"); err != nil {
		t.Fatal(err)
	}
	rot, err := c.RotateWebhookSecret(ctx, "app_1", "we_1")
	if err != nil {
		t.Fatal(err)
	}
	if rot.Secret != "whsec_new" || rot.PreviousSecretExpiresAt == nil || !rot.PreviousSecretExpiresAt.Equal(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("rotation = %+v", rot)
	}
	page, err := c.ListWebhookAttempts(ctx, "app_1", "we_1", &xpromo.WebhookAttemptParams{EventID: "evt_1", Limit: 2, Cursor: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Attempts) != 2 || page.NextCursor == nil || *page.NextCursor != "c2" ||
		*page.Attempts[0].StatusCode != 200 || page.Attempts[1].StatusCode != nil || *page.Attempts[1].Error != "connection_refused" {
		t.Errorf("attempts = %+v", page)
	}
	d, err := c.Redeliver(ctx, "app_1", "we_1", "evt_1")
	if err != nil || d.EventID != "evt_1" || d.Attempts != 0 {
		t.Errorf("redeliver = %+v, %v", d, err)
	}
	_, err = c.Redeliver(ctx, "app_1", "we_off", "evt_1")
	var apiErr *xpromo.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.Code != "webhook_endpoint_disabled" {
		t.Errorf("redeliver to a disabled endpoint: %v", err)
	}
	_, err = c.GetWebhookEndpoint(ctx, "app_2", "we_1")
	if !errors.As(err, &apiErr) || apiErr.Code != "not_found" {
		t.Errorf("another app's endpoint: %v", err)
	}

	want := []struct{ method, path, query, body string }{
		{"POST", "/v1/apps/app_1/webhook-endpoints", "", `{"url":"https://hooks.example.com/x","events":["chain.cleared","payout.sent"],"description":"prod"}`},
		{"GET", "/v1/apps/app_1/webhook-endpoints", "", ""},
		{"GET", "/v1/apps/app_1/webhook-endpoints/we_1", "", ""},
		{"PATCH", "/v1/apps/app_1/webhook-endpoints/we_1", "", `{"description":"","status":"disabled"}`},
		{"DELETE", "/v1/apps/app_1/webhook-endpoints/we_1", "", ""},
		{"POST", "/v1/apps/app_1/webhook-endpoints/we_1/rotate-secret", "", ""},
		{"GET", "/v1/apps/app_1/webhook-endpoints/we_1/attempts", "cursor=c1&event_id=evt_1&limit=2", ""},
		{"POST", "/v1/apps/app_1/webhook-endpoints/we_1/redeliver", "", `{"event_id":"evt_1"}`},
	}
	reqs := f.requests()
	for i, w := range want {
		r := reqs[i]
		if r.Method != w.method || r.Path != w.path || r.RawQuery != w.query || r.Body != w.body {
			t.Errorf("request %d = %s %s?%s %s, want %s %s?%s %s", i, r.Method, r.Path, r.RawQuery, r.Body, w.method, w.path, w.query, w.body)
		}
		if r.Header.Get("Authorization") != "Bearer xp_test_key" {
			t.Errorf("request %d without the API key", i)
		}
		key := r.Header.Get("Idempotency-Key")
		switch {
		case i == 0 && key != "k-1":
			t.Errorf("create sent Idempotency-Key %q, want the caller's", key)
		case r.Method == "POST" && i > 0 && !idemKeyRE.MatchString(key):
			t.Errorf("request %d: POST without a fresh Idempotency-Key (%q)", i, key)
		case r.Method != "POST" && key != "":
			t.Errorf("request %d: %s with an Idempotency-Key", i, r.Method)
		}
	}
}

// eventJSON is an event as the server answers it.
func eventJSON(i int) string {
	return fmt.Sprintf(`{"id":"evt_%d","type":"payout.sent","app_id":"app_1","created_at":"2026-11-21T09:00:%02dZ","data":{"payout":{"transfer_id":"tr_%d","amount_cents":5000,"payout_id":"po_%d"}}}`, i, i, i, i)
}

// TestEventsWalksPages: the iterator follows next_cursor while has_more,
// then stops (it never long-polls); ListEvents sends every parameter.
func TestEventsWalksPages(t *testing.T) {
	const pages = 3
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == "/v1/apps/app_1/events/evt_4" {
			writeJSON(w, 200, eventJSON(4))
			return
		}
		page := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			page, _ = strconv.Atoi(strings.TrimPrefix(c, "c"))
		}
		var evs []string
		for i := range 2 {
			evs = append(evs, eventJSON(page*2+i+1))
		}
		writeJSON(w, 200, fmt.Sprintf(`{"events":[%s],"has_more":%t,"next_cursor":"c%d"}`, strings.Join(evs, ","), page+1 < pages, page+1))
	})
	c := f.client()
	ctx := context.Background()
	since := time.Date(2026, 11, 21, 8, 0, 0, 0, time.FixedZone("x", 3600))
	params := &xpromo.EventParams{Types: []xpromo.EventType{xpromo.EventPayoutSent, xpromo.EventScoreUpdated}, Since: since, Limit: 2, Wait: 25 * time.Second}
	var ids []string
	for ev, err := range c.Events(ctx, "app_1", params) {
		if err != nil {
			t.Fatal(err)
		}
		var d xpromo.PayoutEventData
		if err := json.Unmarshal(ev.Data, &d); err != nil || d.Payout.AmountCents != 5000 {
			t.Errorf("%s data %s: %v", ev.ID, ev.Data, err)
		}
		ids = append(ids, ev.ID)
	}
	if got := strings.Join(ids, ","); got != "evt_1,evt_2,evt_3,evt_4,evt_5,evt_6" {
		t.Errorf("events %s", got)
	}
	reqs := f.requests()
	wantQ := []string{
		"limit=2&since=2026-11-21T07%3A00%3A00Z&type=payout.sent&type=score.updated",
		"cursor=c1&limit=2&since=2026-11-21T07%3A00%3A00Z&type=payout.sent&type=score.updated",
		"cursor=c2&limit=2&since=2026-11-21T07%3A00%3A00Z&type=payout.sent&type=score.updated",
	}
	if len(reqs) != len(wantQ) {
		t.Fatalf("%d pages fetched, want %d", len(reqs), len(wantQ))
	}
	for i, r := range reqs {
		if r.RawQuery != wantQ[i] {
			t.Errorf("page %d query %q, want %q (no wait: the iterator reads what exists)", i, r.RawQuery, wantQ[i])
		}
	}
	if params.Cursor != "" || params.Wait != 25*time.Second {
		t.Error("the iterator changed the caller's params")
	}

	// One page with a long poll: wait in whole seconds, at least one.
	for _, c2 := range []struct {
		wait time.Duration
		q    string
	}{{25 * time.Second, "cursor=c2&wait=25"}, {1500 * time.Millisecond, "cursor=c2&wait=2"}, {time.Millisecond, "cursor=c2&wait=1"}} {
		page, err := c.ListEvents(ctx, "app_1", &xpromo.EventParams{Cursor: "c2", Wait: c2.wait})
		if err != nil {
			t.Fatal(err)
		}
		if page.HasMore || page.NextCursor != "c3" || len(page.Events) != 2 {
			t.Errorf("last page = %+v", page)
		}
		if q := f.requests()[len(f.requests())-1].RawQuery; q != c2.q {
			t.Errorf("wait %s sent %q, want %q", c2.wait, q, c2.q)
		}
	}
	ev, err := c.GetEvent(ctx, "app_1", "evt_4")
	if err != nil || ev.ID != "evt_4" || ev.Type != xpromo.EventPayoutSent || !ev.CreatedAt.Equal(time.Date(2026, 11, 21, 9, 0, 4, 0, time.UTC)) {
		t.Errorf("GetEvent = %+v, %v", ev, err)
	}
}

// TestEventsYieldsError: a refusal ends the iteration with the typed error;
// a server announcing more without moving its cursor is an error, not a
// loop.
func TestEventsYieldsError(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Query().Get("type") == "nope" {
			writeJSON(w, 422, errBody("invalid_event_type", `"nope" is not an event type`, nil))
			return
		}
		writeJSON(w, 200, `{"events":[`+eventJSON(1)+`],"has_more":true,"next_cursor":"same"}`)
	})
	c := f.client()
	var apiErr *xpromo.Error
	for _, err := range c.Events(context.Background(), "app_1", &xpromo.EventParams{Types: []xpromo.EventType{"nope"}}) {
		if !errors.As(err, &apiErr) || apiErr.Code != "invalid_event_type" || apiErr.Status != 422 {
			t.Errorf("err = %v", err)
		}
	}
	var n int
	var last error
	for _, err := range c.Events(context.Background(), "app_1", &xpromo.EventParams{Cursor: "same"}) {
		n++
		last = err
	}
	if n != 2 || last == nil || !strings.Contains(last.Error(), "without a new cursor") {
		t.Errorf("%d yields, last error %v", n, last)
	}
}
