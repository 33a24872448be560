package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/cli"
	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/assembly"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/storage"
)

// advance moves the server's clock (events of one instant have no order
// between them; the goldens need one).
func (s *server) advance(d time.Duration) {
	s.clock.mu.Lock()
	s.clock.now = s.clock.now.Add(d)
	s.clock.mu.Unlock()
}

var secretRe = regexp.MustCompile(`whsec_[A-Za-z0-9+/=]{44}`)

// TestWebhooksCommands runs the webhooks and events commands against the
// real server and compares their output with testdata/*.golden.
func TestWebhooksCommands(t *testing.T) {
	srv := startServer(t, assembly.Config{WebhooksAllowLoopback: true})
	e := newCLI(t, srv)
	e.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	n := e.normalizer()
	app := e.register("", "Clipboard Pro", "com.example.clipboardpro")
	srv.advance(time.Minute)
	e.ok("admin", "approve", app.appID, "--reason", "reviewed")

	created := e.ok("webhooks", "create", "--url", "https://hooks.example.com/xpromo", "--events", "chain.cleared,payout.sent", "--description", "production")
	secret := secretRe.FindString(created.stdout)
	require.NotEmpty(t, secret, created.stdout)
	n.replace(secret, "whsec_"+strings.Repeat("X", 44))
	golden(t, n, "webhooks-create", created.stdout)
	assert.Contains(t, created.stderr, "shown this once")
	id := field(created.stdout, "id")
	require.True(t, strings.HasPrefix(id, "we_"), created.stdout)

	cj := e.ok("webhooks", "create", "--url", "http://127.0.0.1:9/hook", "--events", "score.updated", "--json")
	var second xpromo.WebhookEndpoint
	require.NoError(t, json.Unmarshal([]byte(cj.stdout), &second))
	assert.True(t, strings.HasPrefix(second.Secret, "whsec_"), "--json prints the API's answer, secret included")

	golden(t, n, "webhooks-list", e.ok("webhooks", "list").stdout)
	assert.NotContains(t, e.ok("webhooks", "list", "--json").stdout, "whsec_", "secrets are shown only at creation")
	golden(t, n, "webhooks-update", e.ok("webhooks", "update", id, "--events", "chain.state_changed,chain.cleared", "--description", "").stdout)
	srv.advance(time.Minute)
	golden(t, n, "webhooks-disable", e.ok("webhooks", "disable", id).stdout)
	var firstEvent xpromo.EventPage
	require.NoError(t, json.Unmarshal([]byte(e.ok("events", "list", "--json").stdout), &firstEvent))
	require.NotEmpty(t, firstEvent.Events)
	e.fails(cli.ExitConflict, "webhook_endpoint_disabled", "webhooks", "redeliver", id, "--event-id", firstEvent.Events[0].ID)
	golden(t, n, "webhooks-enable.json", e.ok("webhooks", "enable", id, "--json").stdout)
	rot := e.ok("webhooks", "rotate-secret", id)
	newSecret := secretRe.FindString(rot.stdout)
	require.NotEmpty(t, newSecret)
	assert.NotEqual(t, secret, newSecret)
	n.replace(newSecret, "whsec_"+strings.Repeat("Y", 44))
	golden(t, n, "webhooks-rotate-secret", rot.stdout)
	golden(t, n, "webhooks-get", e.ok("webhooks", "get", id).stdout)
	assert.Equal(t, "no attempts\n", e.ok("webhooks", "attempts", id).stdout)
	assert.Equal(t, `{"attempts":[]}`+"\n", e.ok("webhooks", "attempts", id, "--json").stdout)

	// Events: registration's and approval's score.updated.
	golden(t, n, "events-list", e.ok("events", "list").stdout)
	lj := e.ok("events", "list", "--type", "score.updated", "--json").stdout
	golden(t, n, "events-list.json", lj)
	var page xpromo.EventPage
	require.NoError(t, json.Unmarshal([]byte(lj), &page))
	require.Len(t, page.Events, 2)
	assert.Equal(t, "no events\n", e.ok("events", "list", "--type", "payout.sent").stdout)
	golden(t, n, "events-get", e.ok("events", "get", page.Events[1].ID).stdout)
	got := e.ok("events", "get", page.Events[1].ID, "--json").stdout
	var ev xpromo.Event
	require.NoError(t, json.Unmarshal([]byte(got), &ev))
	assert.Equal(t, page.Events[1].ID, ev.ID)

	// Redelivery queues the event for the endpoint.
	golden(t, n, "webhooks-redeliver", e.ok("webhooks", "redeliver", second.ID, "--event-id", ev.ID).stdout)

	// Refusals, with their exit codes.
	e.fails(cli.ExitUsage, "usage", "webhooks", "create", "--url", "https://hooks.example.com/x", "--events", "chain.exploded")
	e.fails(cli.ExitUsage, "usage", "webhooks", "create", "--url", "https://hooks.example.com/x")
	e.fails(cli.ExitValidation, "webhook_url_forbidden", "webhooks", "create", "--url", "https://10.0.0.1/hook", "--events", "payout.sent")
	e.fails(cli.ExitNotFound, "not_found", "webhooks", "get", "we_00000000000000000000000000")
	e.fails(cli.ExitNotFound, "not_found", "events", "get", "evt_00000000000000000000000000")
	e.fails(cli.ExitUsage, "usage", "webhooks", "update", id)
	e.fails(cli.ExitUsage, "usage", "events", "list", "--since", "yesterday")

	assert.Equal(t, "deleted "+id+"\n", e.ok("webhooks", "delete", id).stdout)
	e.fails(cli.ExitNotFound, "not_found", "webhooks", "get", id)
	assert.Empty(t, e.ok("webhooks", "delete", second.ID, "--json").stdout, "204: no answer to print")
	assert.Equal(t, "no webhook endpoints\n", e.ok("webhooks", "list").stdout)
}

// syncBuffer is written by the CLI while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// receiver is a local webhook receiver: it records each request and
// answers status.
type receiver struct {
	*httptest.Server
	status int
	mu     sync.Mutex
	got    []delivery
	notify chan struct{}
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, status int) *receiver {
	rc := &receiver{status: status, notify: make(chan struct{}, 100)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, delivery{r.Header.Clone(), body})
		rc.mu.Unlock()
		rc.notify <- struct{}{}
		w.WriteHeader(rc.status)
		if rc.status >= 300 {
			io.WriteString(w, "receiver says no\n")
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// await waits for n deliveries in all.
func (rc *receiver) await(t *testing.T, n int) []delivery {
	t.Helper()
	for {
		rc.mu.Lock()
		got := append([]delivery(nil), rc.got...)
		rc.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-rc.notify:
		case <-time.After(time.Minute):
			t.Fatalf("%d deliveries after a minute, want %d", len(got), n)
		}
	}
}

// waitFor waits (up to a minute) until cond holds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met after a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listen runs `xpromo listen args…` in the background until stop is
// called, which returns what it printed and its exit status.
func (e *cliEnv) listen(args ...string) (stdout, stderr *syncBuffer, stop func() result) {
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, e.env(stdout, stderr), append([]string{"listen"}, args...)) }()
	return stdout, stderr, func() result {
		cancel()
		code := <-done
		return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}
}

// TestListen: `xpromo listen` forwards each event once, from --since and
// then as it happens, signed so that sdk/webhook verifies it with the
// secret, shows the local answer, and stops cleanly.
func TestListen(t *testing.T) {
	srv := startServer(t, assembly.Config{})
	e := newCLI(t, srv)
	e.vars["XPROMO_ADMIN_TOKEN"] = adminToken
	app := e.register("", "Clipboard Pro", "com.example.clipboardpro")
	srv.advance(time.Minute)
	e.ok("admin", "approve", app.appID, "--reason", "reviewed")

	rc := newReceiver(t, http.StatusOK)
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	stdout, stderr, stop := e.listen("--since", "2026-11-21T00:00:00Z", "--forward-to", rc.URL+"/hooks", "--secret", secret)
	// The two events so far, then one that happens while listening.
	rc.await(t, 2)
	srv.advance(time.Minute)
	e.ok("admin", "suspend", app.appID, "--reason", "complaints")
	rc.await(t, 3)
	// An event that commits late (PostgreSQL can do that): stamped 5
	// seconds before the last one, written after the listener's cursor
	// passed it. The overlap re-read after the next event finds it.
	late := outbox.New(app.appID, xpromo.EventScoreUpdated, xpromo.ScoreEventData{Score: xpromo.Score{Status: "late", Reasons: []string{}}},
		srv.clock.Now().Add(-5*time.Second))
	require.NoError(t, srv.store.Update(context.Background(), func(ctx context.Context, tx storage.Tx) error {
		return tx.InsertOutbox(ctx, []outbox.Event{late})
	}))
	e.ok("admin", "reinstate", app.appID) // same instant: the overlap (10 s) covers the late one
	got := rc.await(t, 5)
	waitFor(t, func() bool { return strings.Count(stdout.String(), "\n") == 5 })
	res := stop()
	require.Equal(t, cli.ExitOK, res.code, "Ctrl-C is the normal way out\n%s", res)
	assert.Contains(t, stderr.String(), "Ready! Your webhook signing secret is "+secret)
	assert.Contains(t, res.stderr, "Stopped.")

	v, err := webhook.NewVerifier(secret)
	require.NoError(t, err)
	ids := map[string]int{}
	var statuses []xpromo.AppStatus
	for _, d := range got {
		require.NoError(t, v.Verify(d.header, d.body), "the forwarded request verifies with the secret")
		assert.Equal(t, "application/json", d.header.Get("Content-Type"))
		var ev xpromo.Event
		require.NoError(t, json.Unmarshal(d.body, &ev))
		assert.Equal(t, ev.ID, d.header.Get("webhook-id"))
		assert.Equal(t, app.appID, ev.AppID)
		ids[ev.ID]++
		var sc xpromo.ScoreEventData
		require.NoError(t, json.Unmarshal(ev.Data, &sc))
		statuses = append(statuses, sc.Score.Status)
	}
	require.Len(t, statuses, 5)
	assert.Equal(t, []xpromo.AppStatus{"pending", "approved", "suspended"}, statuses[:3], "in order of occurrence")
	// The late commit is behind the cursor: only the overlap re-read finds
	// it (right after the suspension's event, or after the next one).
	assert.ElementsMatch(t, []xpromo.AppStatus{"approved", "late"}, statuses[3:])
	for id, k := range ids {
		assert.Equal(t, 1, k, "%s forwarded once, whatever the overlap re-reads", id)
	}
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Len(t, lines, 5, res.stdout)
	for _, l := range lines {
		assert.Contains(t, l, "score.updated")
		assert.Contains(t, l, "→ [200] POST "+rc.URL+"/hooks")
	}
	assert.Contains(t, lines[2], "status suspended")
	assert.Contains(t, lines[3]+lines[4], late.ID)

	// A fresh secret when none is given; a failing receiver's answer is
	// shown; --events filters; --json prints the events as the API does.
	bad := newReceiver(t, http.StatusInternalServerError)
	stdout, stderr, stop = e.listen("--since", "2026-11-21T00:00:00Z", "--forward-to", bad.URL, "--events", "score.updated", "--json")
	got = bad.await(t, 5)
	waitFor(t, func() bool {
		return strings.Count(stdout.String(), "\n") == 5 && strings.Count(stderr.String(), "[500]") == 5
	})
	res = stop()
	require.Equal(t, cli.ExitOK, res.code, "%s", res)
	fresh := secretRe.FindString(stderr.String())
	require.NotEmpty(t, fresh, stderr.String())
	v, err = webhook.NewVerifier(fresh)
	require.NoError(t, err)
	for _, d := range got {
		require.NoError(t, v.Verify(d.header, d.body))
	}
	assert.Contains(t, res.stderr, "→ [500] POST "+bad.URL+": receiver says no")
	jsonLines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, jsonLines, 5)
	for _, l := range jsonLines {
		var ev xpromo.Event
		require.NoError(t, json.Unmarshal([]byte(l), &ev), l)
		assert.Equal(t, xpromo.EventScoreUpdated, ev.Type)
	}

	// Without --forward-to it only prints; --events takes event types.
	_, _, stop = e.listen("--since", "2026-11-21T00:00:00Z", "--events", "payout.sent")
	res = stop()
	require.Equal(t, cli.ExitOK, res.code, "%s", res)
	assert.Empty(t, res.stdout, "no payout happened")
	e.fails(cli.ExitUsage, "usage", "listen", "--events", "payout.lost")
	e.fails(cli.ExitUsage, "usage", "listen", "--forward-to", "localhost:4242")
	e.fails(cli.ExitUsage, "usage", "listen", "--forward-to", rc.URL, "--secret", "not-a-secret")
	e.fails(cli.ExitUsage, "usage", "listen", "--secret", secret)
}
