package crashtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The check passes when every required event arrived and nothing else did,
// and names each event missing, received unlisted or received different,
// and each endpoint that ended disabled.
func TestCompareWebhooks(t *testing.T) {
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	ev := func(id string) xpromo.Event {
		return xpromo.Event{ID: id, Type: xpromo.EventChainCleared, AppID: pub, CreatedAt: at, Data: json.RawMessage(`{"chain":{"id":"ch_1"}}`)}
	}
	listed := map[string]xpromo.Event{"evt_1": ev("evt_1"), "evt_2": ev("evt_2")}
	required := []xpromo.Event{ev("evt_1"), ev("evt_2")}
	enabled := map[string]xpromo.WebhookEndpoint{pub: {ID: "we_1", Status: xpromo.WebhookEndpointEnabled}}

	var clean WebhookReport
	compareWebhooks(&clean, listed, required, map[string]received{
		// Keys in another order, data reformatted: the same event.
		"evt_1": {app: pub, body: xpromo.Event{ID: "evt_1", Type: xpromo.EventChainCleared, AppID: pub, CreatedAt: at, Data: json.RawMessage(`{ "chain": {"id": "ch_1"} }`)}},
		"evt_2": {app: pub, body: ev("evt_2")},
	}, enabled, nil)
	if clean.Violations() != 0 || clean.Listed != 2 || clean.Required != 2 || clean.Acked != 2 {
		t.Fatalf("clean run: %+v", clean)
	}

	other := ev("evt_2")
	other.Data = json.RawMessage(`{"chain":{"id":"ch_2"}}`)
	reason := xpromo.WebhookDisabledFailing
	var bad WebhookReport
	compareWebhooks(&bad, listed, required, map[string]received{
		"evt_2": {app: pub, body: other},
		"evt_9": {app: pub, body: ev("evt_9")},
		// Stamped by a restarted server before its clock was put back.
		"evt_8": {app: pub, body: xpromo.Event{ID: "evt_8", Type: xpromo.EventChainCleared, AppID: pub, CreatedAt: at.Add(-40 * 24 * time.Hour)}},
	}, map[string]xpromo.WebhookEndpoint{pub: {ID: "we_1", Status: xpromo.WebhookEndpointDisabled, DisabledReason: &reason}},
		[]window{{at.Add(-40*24*time.Hour - time.Second), at.Add(-40*24*time.Hour + time.Second)}})
	if bad.Missing != 1 || bad.Unlisted != 1 || bad.StampedAtRestart != 1 || bad.Mismatched != 1 || bad.Disabled != 1 || bad.Violations() != 4 {
		t.Fatalf("bad run: %+v", bad)
	}
	for _, want := range []string{"evt_1 (chain.cleared of app_pub", "evt_9 (chain.cleared of app_pub) was received but the events API never listed it", "event evt_2 was received as", "endpoint we_1 of app_pub is disabled (failing)"} {
		if !strings.Contains(strings.Join(bad.Problems, "\n"), want) {
			t.Errorf("problems do not say %q:\n%s", want, strings.Join(bad.Problems, "\n"))
		}
	}
}

// The receiver answers 2xx to a delivery that verifies, 400 to one signed
// too long ago (the server retries it), 401 to a bad signature (a
// violation), and records only the first.
func TestReceiver(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	r, err := startReceiver(0, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.wall = func() time.Time { return now }
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	if err := r.trust(pub, secret); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_1","type":"chain.cleared","app_id":"app_pub","created_at":"2026-11-21T08:59:00Z","data":{}}`)
	send := func(signedAt time.Time, key string) int {
		t.Helper()
		sig, err := webhook.Sign(key, "evt_1", signedAt, body)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, r.endpointURL(pub), bytes.NewReader(body))
		req.Header.Set(webhook.HeaderID, "evt_1")
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(signedAt.Unix(), 10))
		req.Header.Set(webhook.HeaderSignature, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(now.Add(-time.Hour), secret); got != http.StatusBadRequest {
		t.Errorf("stale delivery: %d, want 400", got)
	}
	if got := send(now, "whsec_"+strings.Repeat("A", 32)); got != http.StatusUnauthorized {
		t.Errorf("badly signed delivery: %d, want 401", got)
	}
	if got := send(now, secret); got != http.StatusNoContent {
		t.Errorf("good delivery: %d, want 204", got)
	}
	if got := send(now, secret); got != http.StatusNoContent {
		t.Errorf("the same delivery again: %d, want 204", got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rep.Requests != 4 || r.rep.Stale != 1 || r.rep.BadSignatures != 1 || r.rep.Duplicates != 1 || len(r.acked) != 1 {
		t.Errorf("receiver's record: %+v, %d acked", r.rep, len(r.acked))
	}
}
