package assembly_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/storage"
)

// contractWebhooks drives the webhook operations and the events API.
func contractWebhooks(t *testing.T, a *api, appID, key string) {
	t.Helper()
	ev := outbox.New(appID, xpromo.EventScoreUpdated, map[string]any{"score": map[string]any{}}, a.clock.Now().Add(-time.Minute))
	require.NoError(t, a.store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertOutbox(ctx, []outbox.Event{ev})
	}))
	base := "/v1/apps/" + appID + "/webhook-endpoints"
	ep := a.expect(201, a.do("POST", base, key, map[string]any{"url": "https://example.com/hooks", "events": []string{"score.updated"}}, "Idempotency-Key", "wh-1")).json(t)
	assert.Contains(t, ep["secret"], "whsec_")
	one := base + "/" + ep["id"].(string)
	assert.Equal(t, "webhook_url_forbidden", a.expect(422, a.do("POST", base, key, map[string]any{"url": "https://10.0.0.1/x", "events": []string{"score.updated"}})).code(t))
	a.expect(200, a.do("GET", base, key, nil))
	a.expect(200, a.do("GET", one, key, nil))
	a.expect(200, a.do("PATCH", one, key, map[string]any{"description": "contract"}))
	a.expect(200, a.do("POST", one+"/rotate-secret", key, nil))
	a.expect(202, a.do("POST", one+"/redeliver", key, map[string]any{"event_id": ev.ID}))
	a.expect(200, a.do("GET", one+"/attempts?limit=5", key, nil))
	page := a.expect(200, a.do("GET", "/v1/apps/"+appID+"/events?type=score.updated&limit=10", key, nil)).json(t)
	assert.NotEmpty(t, page["events"])
	a.expect(200, a.do("GET", "/v1/apps/"+appID+"/events/"+ev.ID, key, nil))
	a.expect(404, a.do("GET", "/v1/apps/"+appID+"/events/evt_missing", key, nil))
	a.expect(204, a.do("DELETE", one, key, nil))
	a.expect(404, a.do("GET", one, key, nil))
}
