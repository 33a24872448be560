package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

var webhooksStart = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// Endpoints through the API: create (secret shown once), read, list,
// update, rotate, delete; another app's are not found; limits.
func TestWebhookEndpointsAPI(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ts := serve(t, s, webhooksStart, unlimited)
		app, key := ts.newApp()
		other, otherKey := ts.newApp()
		base := "/v1/apps/" + app + "/webhook-endpoints"

		res := ts.do("POST", base, key, map[string]any{"url": "https://example.com/hooks", "events": []string{"chain.cleared", "payout.sent"}, "description": "prod"})
		require.Equal(t, http.StatusCreated, res.status, res.body)
		var ep xpromo.WebhookEndpoint
		res.decode(t, &ep)
		assert.True(t, strings.HasPrefix(ep.Secret, "whsec_"))
		assert.Equal(t, xpromo.WebhookEndpointEnabled, ep.Status)
		assert.Equal(t, []xpromo.EventType{xpromo.EventChainCleared, xpromo.EventPayoutSent}, ep.Events)
		one := base + "/" + ep.ID

		res = ts.do("GET", one, key, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		assert.NotContains(t, res.body, "secret\"", "the secret is shown once")
		res = ts.do("GET", base, key, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		var list xpromo.WebhookEndpointList
		res.decode(t, &list)
		require.Len(t, list.Endpoints, 1)
		assert.Empty(t, list.Endpoints[0].Secret)

		// Another app's key, or another app's path: 404 either way.
		for _, q := range []struct{ method, path, key string }{
			{"GET", one, otherKey},
			{"GET", "/v1/apps/" + other + "/webhook-endpoints/" + ep.ID, otherKey},
			{"DELETE", "/v1/apps/" + other + "/webhook-endpoints/" + ep.ID, otherKey},
			{"POST", "/v1/apps/" + other + "/webhook-endpoints/" + ep.ID + "/rotate-secret", otherKey},
			{"GET", "/v1/apps/" + other + "/webhook-endpoints/" + ep.ID + "/attempts", otherKey},
		} {
			res = ts.do(q.method, q.path, q.key, nil)
			assert.Equal(t, http.StatusNotFound, res.status, "%s %s: %s", q.method, q.path, res.body)
		}

		// Update: absent fields stay; disabling says why; enabling clears it.
		res = ts.do("PATCH", one, key, map[string]any{"status": "disabled"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		res.decode(t, &ep)
		require.NotNil(t, ep.DisabledReason)
		assert.Equal(t, xpromo.WebhookDisabledByRequest, *ep.DisabledReason)
		assert.Equal(t, "prod", ep.Description)
		res = ts.do("PATCH", one, key, map[string]any{"status": "enabled", "events": []string{"score.updated"}, "url": "https://example.org/h"})
		require.Equal(t, http.StatusOK, res.status, res.body)
		res.decode(t, &ep)
		assert.Nil(t, ep.DisabledReason)
		assert.Equal(t, "https://example.org/h", ep.URL)
		assert.Equal(t, []xpromo.EventType{xpromo.EventScoreUpdated}, ep.Events)

		res = ts.do("POST", one+"/rotate-secret", key, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		var rot xpromo.WebhookEndpoint
		res.decode(t, &rot)
		assert.True(t, strings.HasPrefix(rot.Secret, "whsec_"))
		require.NotNil(t, rot.PreviousSecretExpiresAt)

		// Refusals.
		for _, c := range []struct {
			body   any
			status int
			code   string
		}{
			{map[string]any{"url": "ftp://example.com/x", "events": []string{"chain.cleared"}}, 422, "invalid_url"},
			{map[string]any{"url": "https://user:pw@example.com/x", "events": []string{"chain.cleared"}}, 422, "invalid_url"},
			{map[string]any{"url": "https://example.com/x#frag", "events": []string{"chain.cleared"}}, 422, "invalid_url"},
			{map[string]any{"url": "https://169.254.169.254/latest", "events": []string{"chain.cleared"}}, 422, "webhook_url_forbidden"},
			{map[string]any{"url": "http://127.0.0.1:8080/x", "events": []string{"chain.cleared"}}, 422, "webhook_url_forbidden"},
			{map[string]any{"url": "https://[::1]/x", "events": []string{"chain.cleared"}}, 422, "webhook_url_forbidden"},
			{map[string]any{"url": "https://10.1.2.3/x", "events": []string{"chain.cleared"}}, 422, "webhook_url_forbidden"},
			{map[string]any{"url": "https://example.com:8443/x", "events": []string{"chain.cleared"}}, 422, "webhook_url_forbidden"},
			{map[string]any{"url": "https://example.com/x", "events": []string{}}, 422, "invalid_event_type"},
			{map[string]any{"url": "https://example.com/x", "events": []string{"chain.cleared", "chain.cleared"}}, 422, "invalid_event_type"},
			{map[string]any{"url": "https://example.com/x", "events": []string{"chain.exploded"}}, 422, "invalid_event_type"},
			{map[string]any{"url": "https://example.com/x"}, 422, "missing_field"},
		} {
			res = ts.do("POST", base, key, c.body)
			assert.Equal(t, c.status, res.status, "%v: %s", c.body, res.body)
			assert.Equal(t, c.code, res.code(t), "%v", c.body)
		}

		// At most 10 per app.
		for i := 1; i < 10; i++ {
			res = ts.do("POST", base, key, map[string]any{"url": fmt.Sprintf("https://example.com/%d", i), "events": []string{"chain.cleared"}})
			require.Equal(t, http.StatusCreated, res.status, res.body)
		}
		res = ts.do("POST", base, key, map[string]any{"url": "https://example.com/11", "events": []string{"chain.cleared"}})
		assert.Equal(t, http.StatusConflict, res.status, res.body)
		assert.Equal(t, "too_many_webhook_endpoints", res.code(t))

		res = ts.do("DELETE", one, key, nil)
		require.Equal(t, http.StatusNoContent, res.status, res.body)
		res = ts.do("GET", one, key, nil)
		assert.Equal(t, http.StatusNotFound, res.status)
		res = ts.do("DELETE", one, key, nil)
		assert.Equal(t, http.StatusNotFound, res.status)
	})
}

// The loopback setting admits receivers on this machine (test mode).
func TestWebhookLoopbackSetting(t *testing.T) {
	s := storagetest.SQLite(t)
	cfg := unlimited
	cfg.WebhooksAllowLoopback = true
	ts := serve(t, s, webhooksStart, cfg)
	app, key := ts.newApp()
	res := ts.do("POST", "/v1/apps/"+app+"/webhook-endpoints", key, map[string]any{"url": "http://127.0.0.1:4242/hook", "events": []string{"chain.cleared"}})
	assert.Equal(t, http.StatusCreated, res.status, res.body)
	res = ts.do("POST", "/v1/apps/"+app+"/webhook-endpoints", key, map[string]any{"url": "http://10.0.0.1/hook", "events": []string{"chain.cleared"}})
	assert.Equal(t, "webhook_url_forbidden", res.code(t), "only loopback is opened")

	live := assembly.Config{Mode: "live", WebhooksAllowLoopback: true}
	_, err := assembly.Build(live, s)
	require.ErrorContains(t, err, "loopback", "refused in live mode")
}

// The events API: oldest first, paged by cursor, next_cursor always there,
// filtered by type; a long poll answers when an event arrives.
func TestEventsAPI(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		ts := serve(t, s, webhooksStart, unlimited)
		app, key := ts.newApp()
		other, otherKey := ts.newApp()
		var evs []outbox.Event
		for i := range 5 {
			typ := xpromo.EventChainCleared
			if i%2 == 1 {
				typ = xpromo.EventPayoutSent
			}
			evs = append(evs, outbox.New(app, typ, map[string]int{"i": i}, webhooksStart.Add(time.Duration(i)*time.Second)))
		}
		evs = append(evs, outbox.New(other, xpromo.EventChainCleared, map[string]int{"i": 9}, webhooksStart))
		require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { return tx.InsertOutbox(ctx, evs) }))
		base := "/v1/apps/" + app + "/events"

		page := func(query string) xpromo.EventPage {
			t.Helper()
			res := ts.do("GET", base+query, key, nil)
			require.Equal(t, http.StatusOK, res.status, res.body)
			var p xpromo.EventPage
			res.decode(t, &p)
			require.NotEmpty(t, p.NextCursor)
			return p
		}
		// The inserted types only: registering the app wrote its first
		// score.updated.
		const inserted = "type=chain.cleared&type=payout.sent"
		p1 := page("?" + inserted + "&limit=2")
		require.Len(t, p1.Events, 2)
		assert.True(t, p1.HasMore)
		assert.Equal(t, evs[0].ID, p1.Events[0].ID)
		p2 := page("?" + inserted + "&limit=2&cursor=" + p1.NextCursor)
		assert.Equal(t, evs[2].ID, p2.Events[0].ID)
		p3 := page("?" + inserted + "&cursor=" + p2.NextCursor)
		require.Len(t, p3.Events, 1)
		assert.False(t, p3.HasMore)
		empty := page("?" + inserted + "&cursor=" + p3.NextCursor)
		assert.Empty(t, empty.Events)
		assert.Equal(t, p3.NextCursor, empty.NextCursor, "an empty page repeats the cursor")

		typed := page("?type=payout.sent&type=chain.rejected")
		require.Len(t, typed.Events, 2)
		for _, e := range typed.Events {
			assert.Equal(t, xpromo.EventPayoutSent, e.Type)
		}
		since := page("?since=" + url.QueryEscape(webhooksStart.Add(3*time.Second).Format(time.RFC3339)))
		assert.Len(t, since.Events, 2)

		res := ts.do("GET", base+"/"+evs[1].ID, key, nil)
		require.Equal(t, http.StatusOK, res.status, res.body)
		var one xpromo.Event
		res.decode(t, &one)
		assert.JSONEq(t, `{"i":1}`, string(one.Data))
		assert.Equal(t, http.StatusNotFound, ts.do("GET", base+"/"+evs[5].ID, key, nil).status, "another app's event")
		assert.Equal(t, http.StatusNotFound, ts.do("GET", base, otherKey, nil).status, "another app's events")

		for q, code := range map[string]string{
			"?type=chain.exploded": "invalid_event_type", "?cursor=!!": "invalid_cursor", "?limit=0": "invalid_limit",
			"?limit=1001": "invalid_limit", "?wait=31": "invalid_duration", "?since=yesterday": "invalid_date",
		} {
			res := ts.do("GET", base+q, key, nil)
			assert.Equal(t, http.StatusUnprocessableEntity, res.status, "%s: %s", q, res.body)
			assert.Equal(t, code, res.code(t), q)
		}

		// A long poll after the last event returns the next one written.
		done := make(chan xpromo.EventPage, 1)
		go func() {
			res, err := ts.trySend(request{method: "GET", path: base + "?wait=30&cursor=" + p3.NextCursor, key: key})
			if err != nil || res.status != http.StatusOK {
				close(done)
				return
			}
			var p xpromo.EventPage
			if json.Unmarshal([]byte(res.body), &p) != nil {
				close(done)
				return
			}
			done <- p
		}()
		late := outbox.New(app, xpromo.EventScoreUpdated, map[string]int{"i": 6}, webhooksStart.Add(time.Minute))
		require.NoError(t, s.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error { return tx.InsertOutbox(ctx, []outbox.Event{late}) }))
		p, ok := <-done
		require.True(t, ok, "the long poll failed")
		require.Len(t, p.Events, 1)
		assert.Equal(t, late.ID, p.Events[0].ID)
	})
}
